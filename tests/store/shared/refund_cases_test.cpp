// Reconciliation of refunds through store::Tx, on each driver (docs/refunds.md): a refund's case
// names the refund and its payment, resolves as a payment's does (moving the payment's refunded
// total), a payment corrected from SUCCEEDED to FAILED_FINAL opens payment_corrected on its live
// refunds in the same transaction and holds their automatic work, a refund recorded as paid
// after its amount was reused is kept and opens over_refunded on its payment, and the settlement
// import settles refund rows by kind.
#include <doctest/doctest.h>

#include <boost/json/object.hpp>
#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "core/settlement_csv.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::CasResult;
using store::CaseStatus;
using store::ImportSummary;
using store::ReconciliationCase;
using store::RefundIntakeRequest;
using store::Resolution;
using store::ResolutionOutcome;
using store::Resolved;
using store::ResolveResult;
using store::TransitionUpdate;
using store::Tx;
using namespace std::chrono_literals;

constexpr UnixMillis t0 = 1'700'000'000'000;

struct RefundRecon {
  StoreUnderTest& s;
  SeededRandom rng{17};
  int next_op = 0;
  Contract contract = [] {
    Contract c;
    c.key_retention = 24h;
    c.request_timeout = 10s;
    c.lease = 30s;
    return c;
  }();

  Payment payment(std::int64_t amount_minor = 1000) {
    const std::string op = "pay-" + std::to_string(++next_op);
    return s.committed([&](Tx& tx) { return tx.record_intake(intake_request(op, amount_minor), t0, rng).payment; });
  }

  // A payment its vendor charged.
  Payment succeeded_payment(std::int64_t amount_minor) {
    const Payment p = payment(amount_minor);
    apply(p, Trigger::submit_succeeded);
    return p;
  }

  store::RefundIntakeOutcome ask_refund(const Payment& p, std::int64_t amount_minor) {
    RefundIntakeRequest req;
    req.tenant_id = p.tenant_id;
    req.payment_operation_id = p.operation_id;
    req.intent.operation_id = "rf-" + std::to_string(++next_op);
    req.intent.amount_minor = amount_minor;
    return s.committed([&](Tx& tx) { return tx.record_refund_intake(req, t0 + 100, rng); });
  }

  Payment refund(const Payment& p, std::int64_t amount_minor) { return ask_refund(p, amount_minor).refund; }

  Payment row(const Payment& p) { return s.payment(p.id); }

  void apply(const Payment& p, Trigger trigger, CaseReason reason = CaseReason::retry_budget_exhausted) {
    const auto t = transition(row(p).state, trigger, reason);
    REQUIRE(t);
    CHECK(s.committed([&](Tx& tx) {
      return tx.apply_transition(p.id, std::nullopt, *t, TransitionUpdate{}, t0 + 1'000, rng);
    }) == CasResult::applied);
  }

  // The refund sent once (its key retained from t0 + 10), UNKNOWN, and given up: an open case.
  Payment unknown_with_case(const Payment& refund) {
    s.exec("UPDATE payments SET first_submit_at = " + std::to_string(t0 + 10) +
           ", attempt_count = 3 WHERE id = '" + refund.id + "'");
    apply(refund, Trigger::submit_ambiguous);
    apply(refund, Trigger::give_up);
    return row(refund);
  }

  std::optional<ReconciliationCase> open_case(const Payment& p) {
    const Payment now = row(p);
    if (!now.reconciliation || now.reconciliation->status != "open") return std::nullopt;
    return s.read([&](Tx& tx) { return tx.find_case(now.reconciliation->case_id); });
  }

  ResolveResult resolve(const Payment& p, ResolutionOutcome outcome) {
    const auto c = open_case(p);
    REQUIRE(c);
    Resolution r;
    r.outcome = outcome;
    r.note = "checked in the vendor dashboard";
    r.by = "alice";
    const std::string case_id = c->id;
    return s.committed([&](Tx& tx) -> ResolveResult { return tx.resolve_case(case_id, r, contract, t0 + 5'000, rng); });
  }

  // The vendor contradicts the payment's success; the operator corrects it to FAILED_FINAL.
  void correct_to_failed(const Payment& p) {
    apply(p, Trigger::callback_declined);  // late_contradiction
    REQUIRE(std::holds_alternative<Resolved>(resolve(p, ResolutionOutcome::failed_final)));
  }

  std::int64_t events(const Payment& p, std::string_view type) {
    std::int64_t n = 0;
    for (const auto& e : s.read([](Tx& tx) { return tx.list_events("acme", 0, 1000); }).events)
      n += e.payment_id == p.id && e.type == type;
    return n;
  }

  ImportSummary import(const std::string& csv) {
    const store::SettlementFile file = parse_settlement(csv);
    return s.committed([&](Tx& tx) { return tx.import_settlement("sim", file, "ops-bot", t0 + 10'000, rng); });
  }
};

}  // namespace

TEST_CASE_TEMPLATE("refund cases: a refund's case names the refund and its payment, and resolves like a payment's",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  RefundRecon t{*s};
  const Payment p = t.succeeded_payment(1000);
  const Payment won = t.unknown_with_case(t.refund(p, 400));
  const Payment lost = t.unknown_with_case(t.refund(p, 300));
  const Payment again = t.unknown_with_case(t.refund(p, 200));
  CHECK(t.row(p).amount_reserved_minor == 900);

  const auto c = t.open_case(won);
  REQUIRE(c);
  CHECK(c->payment_id == p.id);
  CHECK(c->refund_id == won.id);
  CHECK(c->operation_id == won.operation_id);
  CHECK(c->reason == "retry_budget_exhausted");
  const auto listed = s->read([](Tx& tx) { return tx.list_cases(CaseStatus::open, 10, std::nullopt); });
  REQUIRE(listed.cases.size() == 3);
  for (const auto& lc : listed.cases) {
    CHECK(lc.payment_id == p.id);
    CHECK(lc.refund_id.has_value());
  }

  // succeeded: the refund SUCCEEDED, counted in the payment's refunded total.
  const ResolveResult r1 = t.resolve(won, ResolutionOutcome::succeeded);
  REQUIRE(std::holds_alternative<Resolved>(r1));
  const Resolved& done = std::get<Resolved>(r1);
  REQUIRE(done.payment);
  CHECK(done.payment->id == won.id);
  CHECK(done.resolved_case.refund_id == won.id);
  CHECK(done.resolved_case.status == CaseStatus::resolved);
  CHECK(t.row(won).state == PaymentState::succeeded);
  CHECK(t.events(won, "refund.succeeded") == 1);
  CHECK(t.row(p).state == PaymentState::succeeded);
  CHECK(t.row(p).amount_refunded_minor == 400);

  // failed_final: the refund's amount is free again.
  REQUIRE(std::holds_alternative<Resolved>(t.resolve(lost, ResolutionOutcome::failed_final)));
  CHECK(t.row(lost).state == PaymentState::failed_final);
  CHECK(t.row(lost).failure_code == "reconciliation_failed");
  CHECK(t.events(lost, "refund.failed") == 1);
  CHECK(t.row(p).amount_reserved_minor == 600);
  CHECK(t.row(p).amount_refunded_minor == 400);

  // retry: the refund is worked again, its payment untouched.
  REQUIRE(std::holds_alternative<Resolved>(t.resolve(again, ResolutionOutcome::retry)));
  CHECK(t.row(again).state == PaymentState::unknown);
  CHECK(t.row(again).next_action != NextAction::none);
  CHECK_FALSE(t.open_case(again));
  CHECK(t.row(p).amount_reserved_minor == 600);

  // A payment's own case has no refund_id.
  t.apply(p, Trigger::callback_declined);  // late_contradiction
  const auto pc = t.open_case(p);
  REQUIRE(pc);
  CHECK(pc->payment_id == p.id);
  CHECK_FALSE(pc->refund_id);
}

TEST_CASE_TEMPLATE("refund cases: a payment corrected from SUCCEEDED to FAILED_FINAL opens payment_corrected on its live refunds",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  RefundRecon t{*s};
  const Payment p = t.succeeded_payment(1000);
  const Payment succeeded = t.refund(p, 300);
  t.apply(succeeded, Trigger::submit_succeeded);
  const Payment failed = t.refund(p, 200);
  t.apply(failed, Trigger::submit_declined);
  const Payment processing = t.refund(p, 100);
  const Payment held = t.unknown_with_case(t.refund(p, 100));
  const auto held_case = t.open_case(held);
  REQUIRE(held_case);
  const auto held_escalations = t.events(held, "refund.escalated");
  // Another payment's refund is not touched.
  const Payment other = t.succeeded_payment(1000);
  const Payment bystander = t.refund(other, 100);

  t.correct_to_failed(p);
  CHECK(t.row(p).state == PaymentState::failed_final);

  for (const Payment& r : {succeeded, processing}) {
    CAPTURE(r.id);
    const auto c = t.open_case(r);
    REQUIRE(c);
    CHECK(c->reason == "payment_corrected");
    CHECK(c->payment_id == p.id);
    CHECK(c->refund_id == r.id);
    REQUIRE(c->evidence.size() == 1);
    CHECK(c->evidence[0].at("source").as_string() == "payment_corrected");
    CHECK(t.events(r, "refund.escalated") == 1);
  }
  // A human decides; the refunds keep their states.
  CHECK(t.row(succeeded).state == PaymentState::succeeded);
  CHECK(t.row(processing).state == PaymentState::processing);
  // A FAILED_FINAL refund took no money: nothing to ask.
  CHECK_FALSE(t.row(failed).reconciliation);
  CHECK(t.events(failed, "refund.escalated") == 0);
  // One open case per row: the refund already held gets the evidence, no second event.
  const auto still = t.open_case(held);
  REQUIRE(still);
  CHECK(still->id == held_case->id);
  CHECK(still->reason == "retry_budget_exhausted");
  REQUIRE(still->evidence.size() == held_case->evidence.size() + 1);
  CHECK(still->evidence.back().at("source").as_string() == "payment_corrected");
  CHECK(t.events(held, "refund.escalated") == held_escalations);
  CHECK_FALSE(t.row(bystander).reconciliation);

  // The payment_corrected case resolves as any other.
  REQUIRE(std::holds_alternative<Resolved>(t.resolve(processing, ResolutionOutcome::failed_final)));
  CHECK(t.row(processing).state == PaymentState::failed_final);
}

TEST_CASE_TEMPLATE("refund cases: a corrected payment's live refunds get no automatic work until a human decides",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  RefundRecon t{*s};
  const Payment p = t.succeeded_payment(1000);
  // One refund is claimed and its call is on the wire; another waits for its first submit.
  const Payment on_wire = t.refund(p, 200);
  const auto claim = [&](const std::string& owner, UnixMillis now) {
    return s->committed([&](Tx& tx) { return tx.claim_due(owner, now, 30'000ms, {{"sim", 10}}, 10); });
  };
  const auto leases = claim("node-a", t0 + 200);
  REQUIRE(leases.size() == 1);
  REQUIRE(leases[0].payment_id == on_wire.id);
  const std::int64_t fence = leases[0].fence;
  const Payment waiting = t.refund(p, 300);
  REQUIRE(t.row(waiting).next_action == NextAction::submit);

  t.correct_to_failed(p);

  for (const Payment& r : {on_wire, waiting}) {
    CAPTURE(r.id);
    const Payment now = t.row(r);
    CHECK(now.state == PaymentState::processing);
    CHECK(now.next_action == NextAction::none);
    const auto c = t.open_case(r);
    REQUIRE(c);
    CHECK(c->reason == "payment_corrected");
  }
  // Nothing is claimed, not even once the first lease has lapsed.
  CHECK(claim("node-b", t0 + 200).empty());
  CHECK(claim("node-b", t0 + 60'000).empty());

  // The call that was on the wire comes back ambiguous: recorded, and still no next action.
  TransitionUpdate ambiguous;
  ambiguous.next_attempt_at = t0 + 61'000;
  const Transition submit_ambiguous = *transition(PaymentState::processing, Trigger::submit_ambiguous);
  REQUIRE(submit_ambiguous.next != NextAction::none);
  CHECK(s->committed([&](Tx& tx) {
          return tx.apply_transition(on_wire.id, fence, submit_ambiguous, ambiguous, t0 + 60'500, t.rng);
        }) == CasResult::applied);
  CHECK(t.row(on_wire).state == PaymentState::unknown);
  CHECK(t.row(on_wire).next_action == NextAction::none);
  const auto history = s->read([&](Tx& tx) { return tx.payment_history(on_wire.id); });
  REQUIRE_FALSE(history.empty());
  CHECK(history.back().to_state == "UNKNOWN");
  CHECK(history.back().next_action == "none");
  CHECK(claim("node-b", t0 + 120'000).empty());

  // A human decides: retry gives the waiting refund its work back.
  REQUIRE(std::holds_alternative<Resolved>(t.resolve(waiting, ResolutionOutcome::retry)));
  CHECK(t.row(waiting).next_action != NextAction::none);
  const auto after = claim("node-b", t0 + 120'000);
  REQUIRE(after.size() == 1);
  CHECK(after[0].payment_id == waiting.id);
}

TEST_CASE_TEMPLATE("refund cases: a refund the vendor paid after its amount was reused is recorded, and the payment opens over_refunded",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  RefundRecon t{*s};
  const Payment p = t.succeeded_payment(1000);
  // The first refund is declined, which frees its amount; a second one takes all of it.
  const Payment first = t.refund(p, 700);
  t.apply(first, Trigger::submit_declined);
  REQUIRE(t.row(first).state == PaymentState::failed_final);
  const Payment second = t.refund(p, 1000);
  REQUIRE(t.row(p).amount_reserved_minor == 1000);

  // The settlement file says the vendor refunded the first one after all: a contradiction of a
  // terminal state, held as a case (the import itself commits).
  const ImportSummary sum = t.import(std::string(settlement_kind_header) + "\n" + first.client_key +
                                     ",succeeded,700,EUR,rf_late,refund\n");
  CHECK(sum.errors.empty());
  CHECK(sum.contradictions == 1);
  const auto held = t.open_case(first);
  REQUIRE(held);
  CHECK(held->reason == "late_contradiction");

  // The operator records what the vendor did. Before, the payment's CHECK refused it and the
  // resolution rolled back; now it commits, and the payment is put in front of a human.
  const ResolveResult r = t.resolve(first, ResolutionOutcome::succeeded);
  REQUIRE(std::holds_alternative<Resolved>(r));
  CHECK(t.row(first).state == PaymentState::succeeded);
  const Payment over = t.row(p);
  CHECK(over.state == PaymentState::succeeded);
  CHECK(over.amount_reserved_minor == 1700);
  CHECK(over.amount_refunded_minor == 700);
  const auto c = t.open_case(p);
  REQUIRE(c);
  CHECK(c->reason == "over_refunded");
  CHECK_FALSE(c->refund_id);
  REQUIRE(c->evidence.size() == 1);
  const boost::json::object& e = c->evidence[0].as_object();
  CHECK(e.at("source").as_string() == "over_refunded");
  CHECK(e.at("refund_id").as_string() == first.id);
  CHECK(e.at("amount_minor").as_int64() == 1000);
  CHECK(e.at("amount_reserved_minor").as_int64() == 1700);
  CHECK(e.at("amount_refunded_minor").as_int64() == 700);
  CHECK(t.events(p, "payment.escalated") == 1);
  const auto history = s->read([&](Tx& tx) { return tx.payment_history(p.id); });
  REQUIRE_FALSE(history.empty());
  CHECK(history.back().cause == "over_refunded");
  CHECK(history.back().case_reason == "over_refunded");
  CHECK(history.back().from_state == "SUCCEEDED");
  CHECK(history.back().to_state == "SUCCEEDED");

  // No new refund fits: the intake says what remains (nothing), and the second refund goes on.
  const auto refused = t.ask_refund(p, 1);
  CHECK(refused.kind == store::RefundIntakeOutcome::Kind::exceeds_payment);
  CHECK(refused.remaining_minor == 0);
  CHECK(t.row(second).next_action == NextAction::submit);

  // The vendor refuses the second one (it exceeds what is left of the charge): the payment's
  // figures come back under its amount, and the case stays until a human closes it.
  t.apply(second, Trigger::submit_declined);
  CHECK(t.row(p).amount_reserved_minor == 700);
  REQUIRE(t.open_case(p));
  REQUIRE(std::holds_alternative<Resolved>(t.resolve(p, ResolutionOutcome::succeeded)));
  CHECK(t.row(p).state == PaymentState::succeeded);
  CHECK_FALSE(t.open_case(p));
}

TEST_CASE_TEMPLATE("refund cases: over_refunded on a payment a human already has adds its evidence to that case",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  RefundRecon t{*s};
  const Payment p = t.succeeded_payment(500);
  const Payment first = t.refund(p, 500);
  t.apply(first, Trigger::submit_declined);
  t.refund(p, 500);
  t.apply(p, Trigger::callback_declined);  // late_contradiction on the payment itself
  REQUIRE(t.open_case(p));
  const std::int64_t escalations = t.events(p, "payment.escalated");

  t.apply(first, Trigger::callback_succeeded);  // late_contradiction on the refund
  REQUIRE(std::holds_alternative<Resolved>(t.resolve(first, ResolutionOutcome::succeeded)));
  CHECK(t.row(p).amount_reserved_minor == 1000);
  const auto c = t.open_case(p);
  REQUIRE(c);
  CHECK(c->reason == "late_contradiction");
  REQUIRE_FALSE(c->evidence.empty());
  CHECK(c->evidence.back().at("source").as_string() == "over_refunded");
  CHECK(t.events(p, "payment.escalated") == escalations);
}

TEST_CASE_TEMPLATE("refund cases: the settlement import settles refund rows by kind; a kind the row does not have is a mismatch",
                   D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  RefundRecon t{*s};
  const Payment p = t.succeeded_payment(1000);
  const Payment settled = t.refund(p, 400);                      // PROCESSING: finalized
  const Payment resolved = t.unknown_with_case(t.refund(p, 300));  // a case: resolved (failed)
  const Payment as_charge = t.refund(p, 100);                    // named as a charge: mismatch
  const Payment pending = t.payment(500);                        // PROCESSING
  const Payment deferred = t.refund(pending, 100);               // DEFERRED: never sent
  REQUIRE(t.row(deferred).deferred);

  const std::string csv = std::string(settlement_kind_header) + "\n" +
                          settled.client_key + ",succeeded,400,EUR,rf_1,refund\n" +
                          resolved.client_key + ",declined,300,EUR,,Refund\n" +
                          as_charge.client_key + ",succeeded,100,EUR,rf_3,charge\n" +
                          pending.client_key + ",succeeded,500,EUR,ch_4,refund\n" +
                          deferred.client_key + ",succeeded,100,EUR,rf_5,refund\n";
  const ImportSummary sum = t.import(csv);
  CHECK(sum.rows == 5);
  CHECK(sum.errors.empty());
  CHECK(sum.finalized == 1);
  CHECK(sum.resolved == 1);
  CHECK(sum.mismatched == 3);

  CHECK(t.row(settled).state == PaymentState::succeeded);
  CHECK(t.row(settled).vendor_reference == "rf_1");
  CHECK(t.events(settled, "refund.succeeded") == 1);
  CHECK(t.row(p).amount_refunded_minor == 400);
  CHECK(t.row(resolved).state == PaymentState::failed_final);
  const Payment resolved_row = t.row(resolved);
  REQUIRE(resolved_row.reconciliation);
  CHECK(resolved_row.reconciliation->status == "resolved");

  // Nothing applied on a kind mismatch: a case holds the row.
  const auto held = t.open_case(as_charge);
  REQUIRE(held);
  CHECK(held->reason == "callback_mismatch");
  CHECK(held->refund_id == as_charge.id);
  CHECK(held->evidence.back().at("finding").as_string() == "kind_mismatch");
  CHECK(t.row(as_charge).state != PaymentState::succeeded);
  const auto pending_case = t.open_case(pending);
  REQUIRE(pending_case);
  CHECK(pending_case->evidence.back().at("finding").as_string() == "kind_mismatch");
  CHECK(t.row(pending).state != PaymentState::succeeded);
  // A DEFERRED refund stays as it was; the row is held as a case about its reference.
  CHECK(t.row(deferred).deferred);
  CHECK_FALSE(t.row(deferred).reconciliation);
  bool orphan = false;
  for (const auto& c : s->read([](Tx& tx) { return tx.list_cases(CaseStatus::open, 50, std::nullopt); }).cases)
    orphan = orphan || (!c.payment_id && c.reference == deferred.client_key);
  CHECK(orphan);

  // A file without the kind column settles charges only: a refund's key is a mismatch.
  const Payment later = t.refund(p, 50);
  const ImportSummary old = t.import(std::string(settlement_header) + "\n" + later.client_key +
                                     ",succeeded,50,EUR,rf_6\n");
  CHECK(old.mismatched == 1);
  CHECK(t.row(later).state != PaymentState::succeeded);
}

}  // namespace payorch::test
