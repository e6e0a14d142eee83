// The kept figures through store::Tx, on each driver (store/status.h, store/exposure.h): the
// counts per state, the exposure (UNKNOWN payments and submits in flight) per provider and
// currency, and the recount that finds no difference with them, also after many jobs changed
// them at once (on PostgreSQL from several connections, into several shards).
#include <doctest/doctest.h>

#include <condition_variable>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::ExposureRow;
using store::Tx;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;

// Submits job i = 0 … n-1 at once, `work(i, tx)` each (it may run more than once), and waits for
// every answer.
std::vector<JobResult> run_all(StoreUnderTest& s, int n, const std::function<void(int, Tx&)>& work) {
  std::mutex mu;
  std::condition_variable cv;
  int left = n;
  std::vector<JobResult> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    s.store().submit([&work, i](Tx& tx) { work(i, tx); },
                     [&, i](WriteStatus status, const std::string& error) {
                       const std::lock_guard lock(mu);
                       out[static_cast<std::size_t>(i)] = {status, error};
                       if (--left == 0) cv.notify_all();
                     });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return left == 0; });
  return out;
}

Transition transition_of(PaymentState from, Trigger trigger) {
  const auto t = transition(from, trigger);
  REQUIRE(t.has_value());
  REQUIRE_FALSE(t->open_case.has_value());
  return *t;
}

}  // namespace

TEST_CASE_TEMPLATE("shared store: status counts and exposure follow intake, submits and outcomes", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(6);
  const auto empty = s->read([](Tx& tx) { return tx.status_counts(); });
  CHECK(empty.payments_by_state.size() == 4);
  CHECK(empty.payments_by_state.at("PROCESSING") == 0);
  CHECK(empty.open_cases == 0);
  CHECK_FALSE(empty.oldest_open_case_at.has_value());
  CHECK(empty.open_cases_by_reason.size() == std::size(all_case_reasons));
  CHECK(s->read([](Tx& tx) { return tx.exposure(); }).empty());

  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i)
    REQUIRE(s->run([&](Tx& tx) {
               ids.push_back(tx.record_intake(intake_request("op-" + std::to_string(i), 1000 * (i + 1)), t0 + i, rng).payment.id);
             }).status == WriteStatus::committed);
  CHECK(s->read([](Tx& tx) { return tx.status_counts(); }).payments_by_state.at("PROCESSING") == 3);
  CHECK(s->read([](Tx& tx) { return tx.exposure(); }).empty());  // nothing sent yet

  // The two oldest submits start: exposed until they end.
  std::vector<store::Lease> leases;
  REQUIRE(s->run([&](Tx& tx) {
             leases = tx.claim_due("node-a", t0 + 5, Millis{30'000}, {{"sim", 2}}, 2);
             for (const auto& l : leases) tx.record_call_started(l.payment_id, l.fence, true, t0 + 5);
           }).status == WriteStatus::committed);
  REQUIRE(leases.size() == 2);
  CHECK(s->read([](Tx& tx) { return tx.exposure(); }) ==
        std::vector<ExposureRow>{{"sim", "EUR", 2, 1000 + 2000}});
  const auto figures = s->read([](Tx& tx) { return tx.exposure_of("sim", "EUR"); });
  CHECK(figures.count == 2);
  CHECK(figures.amount_minor == 3000);
  const auto other_currency = s->read([](Tx& tx) { return tx.exposure_of("sim", "USD"); });
  CHECK(other_currency.count == 2);
  CHECK(other_currency.amount_minor == 0);
  CHECK(s->read([](Tx& tx) { return tx.exposure_of("nobody", "EUR"); }).count == 0);
  CHECK(s->read([](Tx& tx) { return tx.exposure_differences(); }).empty());

  // One succeeds: it leaves the exposure and the counts move.
  const auto succeeded = transition(PaymentState::processing, Trigger::submit_succeeded);
  REQUIRE(succeeded.has_value());
  store::TransitionUpdate u;
  u.next_attempt_at = t0 + 6;
  u.last_submit_ended_at = t0 + 6;
  store::CasResult r = store::CasResult::not_found;
  REQUIRE(s->run([&](Tx& tx) {
             r = tx.apply_transition(leases[0].payment_id, leases[0].fence, *succeeded, u, t0 + 6, rng);
           }).status == WriteStatus::committed);
  CHECK(r == store::CasResult::applied);
  const auto counts = s->read([](Tx& tx) { return tx.status_counts(); });
  CHECK(counts.payments_by_state.at("PROCESSING") == 2);
  CHECK(counts.payments_by_state.at("SUCCEEDED") == 1);
  CHECK(s->read([](Tx& tx) { return tx.exposure_of("sim", "EUR"); }).count == 1);
  CHECK(s->read([](Tx& tx) { return tx.exposure_differences(); }).empty());
}

TEST_CASE_TEMPLATE("shared store: many jobs at once keep the figures equal to the recount", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  constexpr int n = 64;
  const auto currency = [](int i) { return i % 8 < 4 ? "EUR" : "USD"; };
  const auto amount = [](int i) { return std::int64_t{100} * (i + 1); };
  const Transition unknown = transition_of(PaymentState::processing, Trigger::submit_ambiguous);
  const Transition succeeded = transition_of(PaymentState::unknown, Trigger::recovery_succeeded);
  const Transition declined = transition_of(PaymentState::unknown, Trigger::recovery_declined);
  REQUIRE(unknown.to == PaymentState::unknown);
  store::TransitionUpdate u;
  u.next_attempt_at = t0 + 60'000;

  // Each job takes an intake and sends it UNKNOWN: into the counts, then into the exposure.
  std::vector<std::string> ids(n);
  for (const JobResult& r : run_all(*s, n, [&](int i, Tx& tx) {
         SeededRandom rng(static_cast<std::uint64_t>(i));
         const auto p = tx.record_intake(intake_request("op-" + std::to_string(i), amount(i), currency(i)),
                                         t0 + i, rng).payment;
         ids[static_cast<std::size_t>(i)] = p.id;
         REQUIRE(tx.apply_transition(p.id, std::nullopt, unknown, u, t0 + i, rng) ==
                 store::CasResult::applied);
       }))
    CHECK_MESSAGE(r.status == WriteStatus::committed, r.error);
  CHECK(s->read([](Tx& tx) { return tx.status_counts(); }).payments_by_state.at("UNKNOWN") == n);
  CHECK(s->read([](Tx& tx) { return tx.exposure_differences(); }).empty());

  // Then, at once: a quarter stays UNKNOWN, a quarter fails, half succeed, leaving the exposure
  // (on PostgreSQL mostly through another connection than the one they entered it by).
  const auto stays = [](int i) { return i % 4 == 3; };
  for (const JobResult& r : run_all(*s, n, [&](int i, Tx& tx) {
         if (stays(i)) return;
         SeededRandom rng(static_cast<std::uint64_t>(n + i));
         REQUIRE(tx.apply_transition(ids[static_cast<std::size_t>(i)], std::nullopt,
                                     i % 4 == 1 ? declined : succeeded, u, t0 + 100, rng) ==
                 store::CasResult::applied);
       }))
    CHECK_MESSAGE(r.status == WriteStatus::committed, r.error);

  const auto counts = s->read([](Tx& tx) { return tx.status_counts(); });
  CHECK(counts.payments_by_state.at("PROCESSING") == 0);
  CHECK(counts.payments_by_state.at("UNKNOWN") == n / 4);
  CHECK(counts.payments_by_state.at("FAILED_FINAL") == n / 4);
  CHECK(counts.payments_by_state.at("SUCCEEDED") == n / 2);
  std::vector<ExposureRow> expected{{"sim", "EUR", 0, 0}, {"sim", "USD", 0, 0}};
  for (int i = 0; i < n; ++i) {
    if (!stays(i)) continue;
    ExposureRow& row = expected[i % 8 < 4 ? 0 : 1];
    ++row.count;
    row.amount_minor += amount(i);
  }
  CHECK(s->read([](Tx& tx) { return tx.exposure(); }) == expected);
  CHECK(s->read([](Tx& tx) { return tx.exposure_of("sim", "USD"); }).count == n / 4);
  CHECK(s->read([](Tx& tx) { return tx.exposure_differences(); }).empty());
}

}  // namespace payorch::test
