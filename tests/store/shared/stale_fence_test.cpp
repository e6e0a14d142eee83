// The fence of the outcome CAS, on each driver: a worker whose lease lapsed and whose payment
// was claimed again (a new fence) answers with its old fence; the store refuses it as
// stale_fence and changes nothing: not the state, the fence, the lease, the outbox, nor what
// the transition observer is told.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::CasResult;
using store::Tx;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;
constexpr Millis lease{30'000};

std::vector<store::Lease> claim(StoreUnderTest& s, const std::string& owner, UnixMillis now) {
  return s.committed([&](Tx& tx) { return tx.claim_due(owner, now, lease, {{"sim", 1}}, 1); });
}

}  // namespace

TEST_CASE_TEMPLATE("shared store: an answer with the fence of a lapsed claim is stale_fence and changes nothing", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(21);
  std::string id;
  REQUIRE(s->run([&](Tx& tx) { id = tx.record_intake(intake_request("op-stale"), t0, rng).payment.id; }).status ==
          WriteStatus::committed);

  const auto first = claim(*s, "node-a", t0 + 10);
  REQUIRE(first.size() == 1);
  CHECK(first[0].fence == 1);
  // node-a's lease lapses; node-b claims the payment again with a new fence.
  const auto second = claim(*s, "node-b", t0 + 10 + lease.count());
  REQUIRE(second.size() == 1);
  CHECK(second[0].payment_id == id);
  CHECK(second[0].fence == 2);

  const Payment before = s->payment(id);
  const auto events_before = s->read([](Tx& tx) { return tx.list_events("acme", 0, 10); }).events.size();
  const auto seen_before = s->transitions_seen();

  // node-a's answer arrives with fence 1.
  const auto t = transition(PaymentState::processing, Trigger::submit_succeeded);
  REQUIRE(t.has_value());
  store::TransitionUpdate u;
  u.next_attempt_at = t0 + 10 + lease.count() + 5;
  u.vendor_reference = "ref-late";
  u.last_submit_ended_at = t0 + 10 + lease.count() + 4;
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(id, first[0].fence, *t, u, t0 + 10 + lease.count() + 5, rng);
        }) == CasResult::stale_fence);

  const Payment after = s->payment(id);
  CHECK(after.state == PaymentState::processing);
  CHECK(after.state == before.state);
  CHECK(after.next_action == before.next_action);
  CHECK(after.fence == 2);
  CHECK(after.lease_owner == before.lease_owner);
  CHECK(after.lease_expires_at == before.lease_expires_at);
  CHECK(after.vendor_reference == before.vendor_reference);
  CHECK(after.last_submit_ended_at == before.last_submit_ended_at);
  CHECK(after.updated_at == before.updated_at);
  CHECK(s->read([](Tx& tx) { return tx.list_events("acme", 0, 10); }).events.size() == events_before);
  CHECK(s->transitions_seen() == seen_before);

  // node-b, holding the current fence, still can.
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(id, second[0].fence, *t, u, t0 + 10 + lease.count() + 6, rng);
        }) == CasResult::applied);
  CHECK(s->payment(id).state == PaymentState::succeeded);
}

}  // namespace payorch::test
