// The kept figures through store::Tx, on each driver (store/status.h, store/exposure.h): the
// counts per state, the exposure (UNKNOWN payments and submits in flight) per provider and
// currency, and the recount that finds no difference with them.
#include <doctest/doctest.h>

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
  CHECK(empty.open_cases_by_reason.size() == 6);
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

}  // namespace payorch::test
