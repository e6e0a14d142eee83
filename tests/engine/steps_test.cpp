// engine/steps: the claim round and the recording of vendor answers on a real database file,
// for what happens around a claim that is never sent and an answer that arrives too late.
#include <doctest/doctest.h>

#include <string>

#include "engine/steps.h"
#include "store/payments.h"
#include "store/leases.h"
#include "store/transitions.h"
#include "store/cases.h"
#include "store/exposure.h"
#include "store/intake.h"
#include "store/sqlite_store.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;
using namespace std::chrono_literals;

namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

struct StepsDb {
  StepsDb() {
    contract.recovery = RecoveryMode::lookup;
    contract.not_found_final_after = Millis(30s);
    contract.key_retention = 24h;
    contract.request_timeout = 10s;
    contract.lease = 30s;
    contracts["sim"] = contract;
  }
  test::TempDatabase file{"steps", t0};
  Db* db = file.db.get();
  store::SqliteTx sqlite{*db};  // the steps' view of it
  SeededRandom rng{7};
  Contract contract;
  std::map<std::string, Contract> contracts;

  Payment intake(const std::string& operation_id) { return test::created_payment(*db, operation_id, t0, rng); }

  std::vector<engine::Call> claim(UnixMillis now) {
    engine::ClaimRound round;
    round.owner = "worker-1";
    round.now = now;
    round.lease = contract.lease;
    round.max = 10;
    round.contracts = &contracts;
    round.quotas = {{"sim", 10}};
    Transaction tx(*db);
    auto calls = engine::claim_round(sqlite, round, rng);
    tx.commit();
    return calls;
  }

  CasResult record(const engine::Call& call, providers::VendorResult result, UnixMillis now) {
    Transaction tx(*db);
    auto r = engine::record_outcome(sqlite, call, result, now, 0.5, rng, nullptr);
    tx.commit();
    return r;
  }

  std::vector<std::string> events(const Payment& p) {
    auto st = db->prepare("SELECT type FROM outbox WHERE payment_id = ? ORDER BY seq");
    st.bind(1, p.id);
    std::vector<std::string> out;
    while (st.step()) out.push_back(st.col_text(0));
    return out;
  }

  Payment reload(const Payment& p) { return *find_payment_by_id(*db, p.id); }
};

providers::VendorResult answer(VendorOutcome o, std::optional<std::string> reference = std::nullopt) {
  providers::VendorResult r;
  r.outcome = o;
  r.vendor_reference = std::move(reference);
  r.http_status = 200;
  r.detail = "test answer";
  return r;
}

}  // namespace

TEST_CASE("a claim never sent is undone: the payment stays PROCESSING, never an interrupted submit") {
  StepsDb t;
  Payment p = t.intake("op-unsent");
  auto calls = t.claim(t0 + 1'000);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].call == CallKind::submit);
  CHECK(t.reload(p).attempt_count == 1);
  CHECK(exposure(*t.db).size() == 1);  // a submit marked started counts as exposed

  {
    Transaction tx(*t.db);
    engine::unclaim(t.sqlite, calls[0], t0 + 2'000);
    tx.commit();
  }
  Payment after = t.reload(p);
  CHECK(after.state == PaymentState::processing);
  CHECK(after.next_action == NextAction::submit);
  CHECK(after.attempt_count == 0);
  CHECK_FALSE(after.first_submit_at);
  CHECK_FALSE(after.last_submit_started_at);
  CHECK_FALSE(after.lease_owner);
  CHECK(after.next_attempt_at == t0 + 2'000);
  CHECK(exposure(*t.db).empty());
  CHECK(exposure_differences(*t.db).empty());

  // The next claim sends it as a first submit: no UNKNOWN, no payment.unknown.
  auto again = t.claim(t0 + 3'000);
  REQUIRE(again.size() == 1);
  CHECK(again[0].call == CallKind::submit);
  CHECK(t.reload(p).state == PaymentState::processing);
  CHECK(t.reload(p).attempt_count == 1);
  CHECK(t.events(p) == std::vector<std::string>{"payment.created"});

  // A claim whose lease was taken over meanwhile is not undone: the marks stay.
  {
    Transaction tx(*t.db);
    REQUIRE(claim_lease(*t.db, p.id, "worker-2", t0 + 40'000, 30s));
    engine::unclaim(t.sqlite, again[0], t0 + 40'001);
    tx.commit();
  }
  CHECK(t.reload(p).attempt_count == 1);
  CHECK(t.reload(p).last_submit_started_at == t0 + 3'000);
}

TEST_CASE("a stale final answer reaching a payment held in a case becomes that case's evidence") {
  StepsDb t;
  Payment p = t.intake("op-held");
  auto calls = t.claim(t0 + 1'000);
  REQUIRE(calls.size() == 1);
  // While the call is out, a callback about the payment disagrees on the amount: a case holds
  // it (no lease: the fence moves on).
  {
    Transaction tx(*t.db);
    hold_with_evidence(*t.db, t.reload(p), mismatch_escalation(PaymentState::processing),
                       boost::json::object{{"source", "callback"}, {"amount_minor", 999}}, t0 + 2'000, t.rng);
    tx.commit();
  }
  CHECK(t.record(calls[0], answer(VendorOutcome::succeeded, "ch_late"), t0 + 3'000) ==
        CasResult::stale_fence);
  Payment after = t.reload(p);
  CHECK(after.state == PaymentState::processing);  // a human decides, not the stale worker
  auto open = find_open_case(*t.db, p.id);
  REQUIRE(open);
  CHECK(open->reason == "callback_mismatch");
  REQUIRE(open->evidence.size() == 2);
  const auto& vendor = open->evidence[1].as_object();
  CHECK(vendor.at("source").as_string() == "vendor");
  CHECK(vendor.at("what").as_string() == "succeeded");
  CHECK(vendor.at("vendor_reference").as_string() == "ch_late");
  CHECK(vendor.at("fence").as_int64() == calls[0].fence);

  // A non-final answer (pending) adds nothing.
  CHECK(t.record(calls[0], answer(VendorOutcome::pending, "ch_late"), t0 + 4'000) == CasResult::stale_fence);
  CHECK(find_open_case(*t.db, p.id)->evidence.size() == 2);
}

TEST_CASE("a submit the vendor refuses for a reused key announces both UNKNOWN and the case") {
  StepsDb t;
  Payment p = t.intake("op-key");
  auto calls = t.claim(t0 + 1'000);
  REQUIRE(calls.size() == 1);
  CHECK(t.record(calls[0], answer(VendorOutcome::key_mismatch), t0 + 2'000) == CasResult::applied);
  CHECK(t.reload(p).state == PaymentState::unknown);
  auto open = find_open_case(*t.db, p.id);
  REQUIRE(open);
  CHECK(open->reason == "vendor_key_mismatch");
  CHECK(t.events(p) == std::vector<std::string>{"payment.created", "payment.unknown", "payment.escalated"});
}
