// apply_transition through store::Tx, on each driver (store/transitions.h): a fenced
// compare-and-set on (id, state, fence) with its outbox event, told to the transition observer
// only once committed; the four ways it does not apply; and a writer without a lease advancing
// the fence so that a worker still in flight is stale, while the payment it made due again is
// claimed by nobody before that worker's lease lapses.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::CasResult;
using store::Tx;
using store::TransitionUpdate;
using store::WriteStatus;

constexpr UnixMillis t0 = 1'700'000'000'000;
constexpr Millis lease{30'000};

Transition transition_of(PaymentState from, Trigger trigger) {
  const auto t = transition(from, trigger);
  REQUIRE(t.has_value());
  REQUIRE_FALSE(t->open_case.has_value());  // cases are not part of these tests
  REQUIRE_FALSE(t->resolves_system_case);
  return *t;
}

// A payment of sim created at t0 and claimed by node-a at t0+10 (fence 1); its id.
std::string claimed_payment(StoreUnderTest& s, Random& rng) {
  std::string id;
  REQUIRE(s.run([&](Tx& tx) {
             id = tx.record_intake(intake_request("op-1"), t0, rng).payment.id;
           }).status == WriteStatus::committed);
  std::vector<store::Lease> leases;
  REQUIRE(s.run([&](Tx& tx) { leases = tx.claim_due("node-a", t0 + 10, lease, {{"sim", 1}}, 1); })
              .status == WriteStatus::committed);
  REQUIRE(leases.size() == 1);
  REQUIRE(leases[0].fence == 1);
  return id;
}

CasResult apply(StoreUnderTest& s, const std::string& id, std::optional<std::int64_t> fence,
                const Transition& t, const TransitionUpdate& u, UnixMillis now, Random& rng) {
  return s.committed([&](Tx& tx) { return tx.apply_transition(id, fence, t, u, now, rng); });
}

}  // namespace

TEST_CASE_TEMPLATE("shared store: apply_transition is a fenced compare-and-set with its event", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(4);
  const std::string id = claimed_payment(*s, rng);
  const Transition succeeded = transition_of(PaymentState::processing, Trigger::submit_succeeded);
  TransitionUpdate u;
  u.next_attempt_at = t0 + 20;
  u.vendor_reference = "ref-1";
  u.last_submit_ended_at = t0 + 19;

  CHECK(apply(*s, id, 0, succeeded, u, t0 + 20, rng) == CasResult::stale_fence);
  CHECK(s->payment(id).state == PaymentState::processing);
  CHECK(apply(*s, "pay_missing", 1, succeeded, u, t0 + 20, rng) == CasResult::not_found);
  CHECK(s->transitions_seen().empty());

  CHECK(apply(*s, id, 1, succeeded, u, t0 + 20, rng) == CasResult::applied);
  const Payment p = s->payment(id);
  CHECK(p.state == PaymentState::succeeded);
  CHECK(p.next_action == succeeded.next);
  CHECK(p.next_attempt_at == t0 + 20);
  CHECK(p.fence == 1);
  CHECK_FALSE(p.lease_owner.has_value());
  CHECK_FALSE(p.lease_expires_at.has_value());
  CHECK(p.vendor_reference == "ref-1");
  CHECK(p.last_submit_ended_at == t0 + 19);
  CHECK(p.updated_at == t0 + 20);
  CHECK_FALSE(p.failure_code.has_value());
  const auto events = s->read([](Tx& tx) { return tx.list_events("acme", 0, 10); }).events;
  REQUIRE(events.size() == 2);
  REQUIRE(succeeded.event.has_value());
  CHECK(events[1].type == to_string(*succeeded.event));
  CHECK(events[1].payload.find("SUCCEEDED") != std::string::npos);
  using Seen = std::vector<std::pair<PaymentState, PaymentState>>;
  CHECK(s->transitions_seen() == Seen{{PaymentState::processing, PaymentState::succeeded}});

  CHECK(apply(*s, id, 1, succeeded, u, t0 + 30, rng) == CasResult::already_in_state);
  const Transition recovered = transition_of(PaymentState::unknown, Trigger::recovery_succeeded);
  CHECK(apply(*s, id, 1, transition_of(PaymentState::processing, Trigger::submit_ambiguous), u,
              t0 + 30, rng) == CasResult::illegal);
  CHECK(apply(*s, id, 1, recovered, u, t0 + 30, rng) == CasResult::already_in_state);
  CHECK(s->read([](Tx& tx) { return tx.list_events("acme", 0, 10); }).events.size() == 2);
  CHECK(s->transitions_seen().size() == 1);
}

TEST_CASE_TEMPLATE("shared store: a writer without a lease fences out the worker in flight", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(5);
  const std::string id = claimed_payment(*s, rng);
  TransitionUpdate u;
  u.next_attempt_at = t0 + 50;
  u.release_lease = false;
  u.failure_code = "timeout";
  CHECK(apply(*s, id, std::nullopt, transition_of(PaymentState::processing, Trigger::submit_ambiguous),
              u, t0 + 40, rng) == CasResult::applied);
  const Payment p = s->payment(id);
  CHECK(p.state == PaymentState::unknown);
  CHECK(p.fence == 2);
  CHECK(p.lease_owner == "node-a");  // release_lease = false keeps it
  CHECK(p.failure_code == "timeout");

  // The worker holding fence 1 answers late: stale, and nothing changes.
  CHECK(apply(*s, id, 1, transition_of(PaymentState::unknown, Trigger::recovery_succeeded), u,
              t0 + 60, rng) == CasResult::stale_fence);
  CHECK(s->payment(id).state == PaymentState::unknown);

  // A job that applies a transition and is then taken back tells nobody.
  const JobResult declined = s->run_judged([&](Tx& tx) {
    CHECK(tx.apply_transition(id, 2, transition_of(PaymentState::unknown, Trigger::recovery_succeeded),
                              u, t0 + 70, rng) == CasResult::applied);
    return store::Store::Verdict::take_back;
  });
  CHECK(declined.status == WriteStatus::declined);
  CHECK(s->payment(id).state == PaymentState::unknown);
  CHECK(s->transitions_seen().size() == 1);
}

TEST_CASE_TEMPLATE("shared store: a payment due again under a live lease is claimed only once the lease lapses", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(6);
  const std::string id = claimed_payment(*s, rng);
  const UnixMillis lapses = t0 + 10 + lease.count();
  // As an operator's retry or a stop leaves it: due at once, node-a's lease (and its call on the
  // wire) kept.
  TransitionUpdate u;
  u.next_attempt_at = t0 + 50;
  u.release_lease = false;
  REQUIRE(apply(*s, id, std::nullopt, transition_of(PaymentState::processing, Trigger::submit_ambiguous), u,
                t0 + 40, rng) == CasResult::applied);
  const Payment due = s->payment(id);
  REQUIRE(due.next_attempt_at == t0 + 50);
  REQUIRE(due.lease_owner == "node-a");
  REQUIRE(due.lease_expires_at == lapses);

  const auto claim = [&](const std::string& owner, UnixMillis now) {
    return s->committed([&](Tx& tx) { return tx.claim_due(owner, now, lease, {{"sim", 10}}, 10); });
  };
  CHECK(claim("node-b", t0 + 60).empty());
  CHECK(claim("node-a", t0 + 60).empty());  // nor its own holder: its call is still on the wire
  CHECK(claim("node-b", lapses - 1).empty());
  CHECK(s->payment(id).fence == 2);
  CHECK(s->payment(id).lease_owner == "node-a");

  const auto taken = claim("node-b", lapses);
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].payment_id == id);
  CHECK(taken[0].owner == "node-b");
  CHECK(taken[0].fence == 3);
  CHECK(s->payment(id).lease_owner == "node-b");
}

}  // namespace payorch::test
