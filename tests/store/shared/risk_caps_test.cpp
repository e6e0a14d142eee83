// The risk caps at the start of a call, on each driver (store/leases.h start_calls): a capped
// submit starts only while the exposure stays within its provider's caps (core/risk.h
// would_exceed_risk_cap), each one counted before the next is judged; one held back gives up its
// lease. SQLite checks the kept exposure; PostgreSQL takes each submit out of the room left under
// the caps (schema/postgres/007): both must answer alike, the lone payment over the amount cap
// and a lowered cap included.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::CallStart;
using store::CallStartResult;
using store::Tx;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;
constexpr Millis lease{30'000};
constexpr UnixMillis held_until = t0 + 60'000;

class Caps {
public:
  explicit Caps(StoreUnderTest& s) : s_(s) {}

  // A payment of sim, due at t0.
  std::string payment(std::int64_t amount_minor, const std::string& currency = "EUR") {
    std::string id;
    REQUIRE(s_.run([&](Tx& tx) {
               id = tx.record_intake(intake_request("op-" + std::to_string(++made_), amount_minor, currency),
                                     t0, rng_).payment.id;
             }).status == WriteStatus::committed);
    return id;
  }

  // Claims `ids` (all that are due) at `now` and starts a submit of each under `cap`, in the
  // order of `ids`; what each was answered.
  std::vector<CallStartResult> submit(const std::vector<std::string>& ids, RiskCap cap, UnixMillis now) {
    return s_.committed([&](Tx& tx) {
      std::vector<CallStart> starts;
      for (const auto& l : tx.claim_due("node-a", now, lease, {{"sim", 100}}, 100)) {
        fences_[l.payment_id] = l.fence;
        if (std::find(ids.begin(), ids.end(), l.payment_id) == ids.end()) {
          tx.release_lease(l.payment_id, l.fence, now);  // not this round's: due again at once
          continue;
        }
        const auto p = l.row ? l.row : tx.find_payment_by_id(l.payment_id);
        REQUIRE(p);
        starts.push_back(CallStart{l.payment_id, l.fence, true, cap, "sim", p->currency, p->amount_minor});
      }
      std::sort(starts.begin(), starts.end(), [&](const CallStart& a, const CallStart& b) {
        return std::find(ids.begin(), ids.end(), a.payment_id) < std::find(ids.begin(), ids.end(), b.payment_id);
      });
      std::vector<CallStartResult> out;
      for (const auto& started : tx.start_calls(starts, now, held_until)) out.push_back(started.result);
      return out;
    });
  }

  // The submit of `id` never went: it leaves the exposure, due again at `now`.
  void unsent(const std::string& id, UnixMillis now) {
    REQUIRE(s_.committed([&](Tx& tx) { return tx.undo_call_started(id, fences_.at(id), {}, now); }));
  }

  ExposureFigures exposure(const std::string& currency = "EUR") {
    return s_.read([&](Tx& tx) { return tx.exposure_of("sim", currency); });
  }

private:
  StoreUnderTest& s_;
  SeededRandom rng_{5};
  int made_ = 0;
  std::map<std::string, std::int64_t> fences_;
};

constexpr auto started = CallStartResult::started;
constexpr auto held = CallStartResult::held;

}  // namespace

TEST_CASE_TEMPLATE("shared store: start_calls holds submits back at the count and amount caps", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Caps caps(*s);
  const std::vector<std::string> ids{caps.payment(400), caps.payment(300), caps.payment(500),
                                     caps.payment(200), caps.payment(900), caps.payment(100, "USD")};
  const RiskCap cap{3, 1'000};
  // 400, 300: 700; 500 would be 1,200; 200: 900 and three payments; then the count is full,
  // whatever the currency.
  CHECK(caps.submit(ids, cap, t0 + 1) ==
        std::vector<CallStartResult>{started, started, held, started, held, held});
  CHECK(caps.exposure().count == 3);
  CHECK(caps.exposure().amount_minor == 900);
  const Payment waiting = s->payment(ids[2]);
  CHECK_FALSE(waiting.lease_owner);
  CHECK(waiting.next_attempt_at == held_until);
  CHECK(waiting.attempt_count == 0);
  CHECK_FALSE(waiting.last_submit_started_at);

  // 400 leaves: 500 fits beside 500, and then the count is full again.
  caps.unsent(ids[0], t0 + 2);
  CHECK(caps.submit({ids[2], ids[5], ids[0]}, cap, held_until) ==
        std::vector<CallStartResult>{started, held, held});
  CHECK(caps.exposure().count == 3);
  CHECK(caps.exposure().amount_minor == 1'000);
}

TEST_CASE_TEMPLATE("shared store: start_calls lets a payment over the amount cap go alone", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Caps caps(*s);
  const std::string large = caps.payment(5'000);
  const std::string small = caps.payment(100);
  const RiskCap cap{5, 1'000};
  // Nothing of EUR is exposed: the large one goes; beside it nothing else of EUR.
  CHECK(caps.submit({large, small}, cap, t0 + 1) == std::vector<CallStartResult>{started, held});
  CHECK(caps.exposure().amount_minor == 5'000);
  CHECK(caps.submit({small}, cap, held_until) == std::vector<CallStartResult>{held});
  // Once it leaves, the whole cap is room again.
  caps.unsent(large, held_until + 1);
  CHECK(caps.submit({small, large}, cap, held_until * 2) == std::vector<CallStartResult>{started, held});
  CHECK(caps.exposure().amount_minor == 100);
}

TEST_CASE_TEMPLATE("shared store: a lowered cap holds submits back until the exposure is under it", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Caps caps(*s);
  const std::vector<std::string> ids{caps.payment(300), caps.payment(300), caps.payment(300),
                                     caps.payment(100)};
  CHECK(caps.submit({ids[0], ids[1], ids[2]}, RiskCap{5, 1'000}, t0 + 1) ==
        std::vector<CallStartResult>{started, started, started});
  // The cap is lowered to 500 with 900 exposed: 100 more waits until 400 or less is exposed.
  const RiskCap lowered{5, 500};
  CHECK(caps.submit({ids[3]}, lowered, t0 + 2) == std::vector<CallStartResult>{held});
  caps.unsent(ids[0], held_until);
  CHECK(caps.submit({ids[3]}, lowered, held_until) == std::vector<CallStartResult>{held});
  caps.unsent(ids[1], held_until * 2);
  CHECK(caps.submit({ids[3]}, lowered, held_until * 2) == std::vector<CallStartResult>{started});
  CHECK(caps.exposure().amount_minor == 400);
}

}  // namespace payorch::test
