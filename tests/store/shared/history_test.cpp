// The payment history through store::Tx, on each driver (store/history.h): one row per applied
// change, in the change's own transaction, with its fence, cause and event; nothing for a write
// that did not apply; a DEFERRED refund's release; a correction and the refund case it opens;
// and rows that outlive the outbox's purge.
#include <doctest/doctest.h>

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "core/refund.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::CasResult;
using store::HistoryEntry;
using store::TransitionUpdate;
using store::Tx;

constexpr UnixMillis t0 = 1'700'000'000'000;
constexpr Millis lease{30'000};

std::vector<HistoryEntry> history_of(StoreUnderTest& s, const std::string& id) {
  return s.read([&](Tx& tx) { return tx.payment_history(id); });
}

// "from>to/next/fence/cause/event" per row, for one CHECK of the whole history.
std::vector<std::string> rendered(const std::vector<HistoryEntry>& h) {
  std::vector<std::string> out;
  for (const auto& e : h)
    out.push_back(e.from_state.value_or("-") + ">" + e.to_state + "/" + e.next_action + "/" +
                  std::to_string(e.fence) + "/" + e.cause + "/" + e.event_type.value_or("-"));
  return out;
}

std::string event_id_of(StoreUnderTest& s, const std::string& payment_id, const std::string& type) {
  const auto page = s.read([&](Tx& tx) { return tx.list_events("acme", 0, 1000); });
  for (const auto& e : page.events)
    if (e.payment_id == payment_id && e.type == type) return e.event_id;
  FAIL("no " << type << " event for " << payment_id);
  return {};
}

}  // namespace

TEST_CASE_TEMPLATE("history: intake, a pending answer and success, each with its fence, cause and event", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(19);
  store::IntakeRequest req = intake_request("op-h1");
  req.origin.request_id = "req-intake-1";
  const Payment p = s->committed([&](Tx& tx) { return tx.record_intake(req, t0, rng).payment; });
  std::vector<store::Lease> leases;
  REQUIRE(s->run([&](Tx& tx) { leases = tx.claim_due("node-a", t0 + 10, lease, {{"sim", 1}}, 1); })
              .status == store::WriteStatus::committed);
  REQUIRE(leases.size() == 1);
  const std::int64_t fence = leases[0].fence;

  TransitionUpdate pending;
  pending.next_action = NextAction::query;
  pending.next_attempt_at = t0 + 1'000;
  const Transition submit_pending = legal_transition(PaymentState::processing, Trigger::submit_pending);
  CHECK(s->committed([&](Tx& tx) { return tx.apply_transition(p.id, fence, submit_pending, pending, t0 + 20, rng); }) ==
        CasResult::applied);
  // A stale writer (an older fence) changes nothing and records nothing.
  const Transition succeeded = legal_transition(PaymentState::processing, Trigger::recovery_succeeded);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, fence - 1, succeeded, TransitionUpdate{}, t0 + 25, rng);
        }) == CasResult::stale_fence);
  CHECK(history_of(*s, p.id).size() == 2);
  // A callback (no lease) advances the fence: the row records the fence it set.
  TransitionUpdate by_callback;
  by_callback.request_id = "req-callback-1";
  const Transition callback = legal_transition(PaymentState::processing, Trigger::callback_succeeded);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, std::nullopt, callback, by_callback, t0 + 30, rng);
        }) == CasResult::applied);
  // A confirming answer on a terminal payment is a no-op: nothing written, no history row.
  const Transition confirm = legal_transition(PaymentState::succeeded, Trigger::recovery_succeeded);
  REQUIRE(confirm.noop());
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, std::nullopt, confirm, TransitionUpdate{}, t0 + 40, rng);
        }) == CasResult::already_in_state);

  const auto h = history_of(*s, p.id);
  CHECK(rendered(h) == std::vector<std::string>{
                           "->PROCESSING/submit/0/intake/payment.created",
                           "PROCESSING>PROCESSING/query/" + std::to_string(fence) + "/submit_pending/-",
                           "PROCESSING>SUCCEEDED/none/" + std::to_string(fence + 1) +
                               "/callback_succeeded/payment.succeeded"});
  REQUIRE(h.size() == 3);
  CHECK(h[0].seq < h[1].seq);
  CHECK(h[1].seq < h[2].seq);
  CHECK(h[0].at == t0);
  CHECK(h[1].at == t0 + 20);
  CHECK(h[2].at == t0 + 30);
  CHECK(h[0].payment_id == p.id);
  CHECK(h[0].request_id == "req-intake-1");
  CHECK(h[0].event_id == event_id_of(*s, p.id, "payment.created"));
  CHECK_FALSE(h[1].request_id.has_value());
  CHECK_FALSE(h[1].event_id.has_value());
  CHECK(h[2].request_id == "req-callback-1");
  CHECK(h[2].event_id == event_id_of(*s, p.id, "payment.succeeded"));
  CHECK(s->payment(p.id).fence == fence + 1);
  CHECK(s->count_rows("payment_history") == 3);
}

TEST_CASE_TEMPLATE("history: an escalation names its case; a resolution its trigger", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(20);
  const Payment p = s->committed([&](Tx& tx) { return tx.record_intake(intake_request("op-h2"), t0, rng).payment; });
  const Transition ambiguous = legal_transition(PaymentState::processing, Trigger::submit_ambiguous);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, std::nullopt, ambiguous, TransitionUpdate{}, t0 + 10, rng);
        }) == CasResult::applied);
  const Transition give_up = legal_transition(PaymentState::unknown, Trigger::give_up);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, std::nullopt, give_up, TransitionUpdate{}, t0 + 20, rng);
        }) == CasResult::applied);
  const auto open = s->read([&](Tx& tx) { return tx.cases_of_row(p.id); });
  REQUIRE(open.size() == 1);
  store::Resolution r;
  r.outcome = store::ResolutionOutcome::succeeded;
  r.note = "the vendor's dashboard shows the charge";
  r.by = "ops";
  r.request_id = "req-resolve-1";
  std::optional<store::ResolveResult> resolved;
  REQUIRE(s->run([&](Tx& tx) { resolved = tx.resolve_case(open[0].id, r, Contract{}, t0 + 30, rng); }).status ==
          store::WriteStatus::committed);
  REQUIRE(resolved);
  REQUIRE(std::holds_alternative<store::Resolved>(*resolved));

  const auto h = history_of(*s, p.id);
  CHECK(rendered(h) == std::vector<std::string>{
                           "->PROCESSING/submit/0/intake/payment.created",
                           "PROCESSING>UNKNOWN/query/1/submit_ambiguous/payment.unknown",
                           "UNKNOWN>UNKNOWN/none/2/give_up/payment.escalated",
                           "UNKNOWN>SUCCEEDED/none/3/resolve_succeeded/payment.succeeded"});
  REQUIRE(h.size() == 4);
  CHECK(h[2].case_reason == "retry_budget_exhausted");
  CHECK_FALSE(h[3].case_reason.has_value());
  CHECK(h[3].request_id == "req-resolve-1");
  const auto cases = s->read([&](Tx& tx) { return tx.cases_of_row(p.id); });
  REQUIRE(cases.size() == 1);
  CHECK(cases[0].status == store::CaseStatus::resolved);
}

TEST_CASE_TEMPLATE("history: a DEFERRED refund's release is a row of the refund, in its payment's transaction", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(21);
  const Payment p = s->committed([&](Tx& tx) { return tx.record_intake(intake_request("op-h3"), t0, rng).payment; });
  store::RefundIntakeRequest req;
  req.tenant_id = p.tenant_id;
  req.payment_operation_id = p.operation_id;
  req.intent.operation_id = "rf-h3";
  req.intent.amount_minor = 400;
  req.origin.request_id = "req-refund-1";
  const auto refund = s->committed([&](Tx& tx) { return tx.record_refund_intake(req, t0 + 5, rng); });
  REQUIRE(refund.kind == store::RefundIntakeOutcome::Kind::created);
  REQUIRE(refund.refund.deferred);
  const Transition succeeded = legal_transition(PaymentState::processing, Trigger::callback_succeeded);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, std::nullopt, succeeded, TransitionUpdate{}, t0 + 10, rng);
        }) == CasResult::applied);

  const auto h = history_of(*s, refund.refund.id);
  CHECK(rendered(h) == std::vector<std::string>{"->DEFERRED/none/0/intake/refund.created",
                                                "DEFERRED>PROCESSING/submit/0/payment_succeeded/refund.processing"});
  REQUIRE(h.size() == 2);
  CHECK(h[0].request_id == "req-refund-1");
  CHECK(h[1].at == t0 + 10);
  CHECK(h[1].event_id == event_id_of(*s, refund.refund.id, "refund.processing"));
  // The payment's own row was recorded first, in the same transaction.
  const auto ph = history_of(*s, p.id);
  REQUIRE(ph.size() == 2);
  CHECK(ph[1].seq < h[1].seq);
}

TEST_CASE_TEMPLATE("history: outlives the purge of delivered events", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(22);
  const Payment p = s->committed([&](Tx& tx) { return tx.record_intake(intake_request("op-h4"), t0, rng).payment; });
  const Transition succeeded = legal_transition(PaymentState::processing, Trigger::callback_succeeded);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, std::nullopt, succeeded, TransitionUpdate{}, t0 + 10, rng);
        }) == CasResult::applied);
  for (const auto& e : s->read([&](Tx& tx) { return tx.outbox_history(p.id); }))
    CHECK(s->committed([&](Tx& tx) { return tx.mark_delivered(e.event_id, t0 + 20); }));
  CHECK(s->read([&](Tx& tx) { return tx.outbox_history(p.id); }).size() == 2);
  CHECK(s->committed([&](Tx& tx) { return tx.purge_delivered_events(t0 + 1'000, 100); }) == 2);
  CHECK(s->read([&](Tx& tx) { return tx.outbox_history(p.id); }).empty());
  CHECK(rendered(history_of(*s, p.id)) ==
        std::vector<std::string>{"->PROCESSING/submit/0/intake/payment.created",
                                 "PROCESSING>SUCCEEDED/none/1/callback_succeeded/payment.succeeded"});
}

}  // namespace payorch::test

namespace payorch::test {

TEST_CASE_TEMPLATE("history: a correction's payment.corrected, its refund's payment_corrected case, a mismatch", D,
                   PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  SeededRandom rng(23);
  const Payment p = s->committed([&](Tx& tx) { return tx.record_intake(intake_request("op-h5"), t0, rng).payment; });
  const Transition succeeded = legal_transition(PaymentState::processing, Trigger::callback_succeeded);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, std::nullopt, succeeded, TransitionUpdate{}, t0 + 10, rng);
        }) == CasResult::applied);
  store::RefundIntakeRequest req;
  req.tenant_id = p.tenant_id;
  req.payment_operation_id = p.operation_id;
  req.intent.operation_id = "rf-h5";
  req.intent.amount_minor = 300;
  const auto refund = s->committed([&](Tx& tx) { return tx.record_refund_intake(req, t0 + 20, rng); });
  REQUIRE(refund.kind == store::RefundIntakeOutcome::Kind::created);

  // A terminal payment's mismatch: a case opened by hand, no trigger names it.
  const Payment paid = s->payment(p.id);
  s->committed([&](Tx& tx) {
    return tx.hold_with_evidence(paid, store::mismatch_escalation(paid.state),
                                 boost::json::object{{"source", "test"}}, t0 + 25, rng);
  });
  // An operator corrects it: SUCCEEDED to FAILED_FINAL.
  const Transition corrected = legal_transition(PaymentState::succeeded, Trigger::resolve_failed_final);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(p.id, std::nullopt, corrected, TransitionUpdate{}, t0 + 30, rng);
        }) == CasResult::applied);

  const auto h = history_of(*s, p.id);
  CHECK(rendered(h) == std::vector<std::string>{
                           "->PROCESSING/submit/0/intake/payment.created",
                           "PROCESSING>SUCCEEDED/none/1/callback_succeeded/payment.succeeded",
                           "SUCCEEDED>SUCCEEDED/none/2/callback_mismatch/payment.escalated",
                           "SUCCEEDED>FAILED_FINAL/none/3/resolve_failed_final/payment.corrected"});
  REQUIRE(h.size() == 4);
  CHECK(h[2].case_reason == "callback_mismatch");
  const auto rh = history_of(*s, refund.refund.id);
  CHECK(rendered(rh) == std::vector<std::string>{
                            "->PROCESSING/submit/0/intake/refund.created",
                            "PROCESSING>PROCESSING/none/0/payment_corrected/refund.escalated"});
  REQUIRE(rh.size() == 2);
  CHECK(rh[1].case_reason == "payment_corrected");
  CHECK(rh[1].at == t0 + 30);
  CHECK(rh[1].event_id == event_id_of(*s, refund.refund.id, "refund.escalated"));
}

}  // namespace payorch::test
