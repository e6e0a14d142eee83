// Refunds through store::Tx, on each driver (store/refunds.h, docs/refunds.md): the intake's
// answers, the money rule at its edges, DEFERRED refunds released or failed in their payment's
// own transaction, the payment's refunded total, and the database refusing what the money rule
// refuses even when a writer skips it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/refund.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"

namespace payorch::test {
namespace {

using store::CasResult;
using store::RefundIntakeOutcome;
using store::RefundIntakeRequest;
using store::TransitionUpdate;
using store::Tx;
using Kind = RefundIntakeOutcome::Kind;

constexpr UnixMillis t0 = 1'700'000'000'000;

struct Refunds {
  StoreUnderTest& s;
  SeededRandom rng{11};
  int next_op = 0;

  Payment payment(std::int64_t amount_minor) {
    const std::string op = "pay-" + std::to_string(++next_op);
    return s.committed([&](Tx& tx) { return tx.record_intake(intake_request(op, amount_minor), t0, rng).payment; });
  }

  RefundIntakeOutcome refund(const Payment& p, std::int64_t amount_minor, std::string op = "") {
    RefundIntakeRequest req;
    req.tenant_id = p.tenant_id;
    req.payment_operation_id = p.operation_id;
    req.intent.operation_id = op.empty() ? "rf-" + std::to_string(++next_op) : std::move(op);
    req.intent.amount_minor = amount_minor;
    return s.committed([&](Tx& tx) { return tx.record_refund_intake(req, t0 + 100, rng); });
  }

  CasResult apply(const std::string& id, Trigger trigger, UnixMillis at = t0 + 1'000) {
    const Payment now = s.payment(id);
    const auto t = transition(now.state, trigger);
    REQUIRE(t);
    return s.committed([&](Tx& tx) { return tx.apply_transition(id, std::nullopt, *t, TransitionUpdate{}, at, rng); });
  }

  std::vector<std::string> event_types(const std::string& id) {
    std::vector<std::string> out;
    const auto page = s.read([&](Tx& tx) { return tx.list_events("acme", 0, 1000); });
    for (const auto& e : page.events)
      if (e.payment_id == id) out.push_back(e.type);
    return out;
  }
};

}  // namespace

TEST_CASE_TEMPLATE("refunds: the intake's answers and the money rule at its edges", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Refunds r{*s};
  const Payment p = r.payment(1000);
  r.apply(p.id, Trigger::submit_succeeded);

  const auto first = r.refund(p, 400, "rf-a");
  REQUIRE(first.kind == Kind::created);
  CHECK(first.refund.id.starts_with("re_"));
  REQUIRE(first.refund.refund_of);
  CHECK(first.refund.refund_of->id == p.id);
  CHECK_FALSE(first.refund.deferred);
  CHECK(first.refund.state == PaymentState::processing);
  CHECK(first.refund.next_action == NextAction::submit);
  CHECK(first.refund.provider == p.provider);
  CHECK(first.refund.currency == p.currency);
  CHECK(first.refund.client_key != p.client_key);
  CHECK(s->payment(p.id).amount_reserved_minor == 400);

  // The same key and amount: replayed; another amount: a conflict, audited, nothing else.
  CHECK(r.refund(p, 400, "rf-a").kind == Kind::replayed);
  const auto conflicts_before = s->count_rows("idempotency_conflicts");
  const auto reuse = r.refund(p, 401, "rf-a");
  CHECK(reuse.kind == Kind::conflict);
  CHECK(reuse.refund.id == first.refund.id);
  CHECK(s->count_rows("idempotency_conflicts") == conflicts_before + 1);

  // 600 left: one over is refused with what is left, exactly the rest is accepted.
  const auto over = r.refund(p, 601);
  CHECK(over.kind == Kind::exceeds_payment);
  CHECK(over.remaining_minor == 600);
  const auto rest = r.refund(p, 600);
  REQUIRE(rest.kind == Kind::created);
  CHECK(r.refund(p, 1).kind == Kind::exceeds_payment);
  CHECK(s->payment(p.id).amount_reserved_minor == 1000);

  // A refund that fails frees its amount; one that succeeds counts in the refunded total.
  CHECK(r.apply(rest.refund.id, Trigger::submit_declined) == CasResult::applied);
  CHECK(s->payment(p.id).amount_reserved_minor == 400);
  CHECK(r.refund(p, 600).kind == Kind::created);
  CHECK(r.apply(first.refund.id, Trigger::submit_succeeded) == CasResult::applied);
  CHECK(s->payment(p.id).amount_refunded_minor == 400);
  CHECK(r.event_types(first.refund.id) == std::vector<std::string>{"refund.created", "refund.succeeded"});
  CHECK(r.event_types(rest.refund.id) == std::vector<std::string>{"refund.created", "refund.failed"});

  // Listing and lookup; no refund is a payment.
  CHECK(s->read([&](Tx& tx) { return tx.list_refunds(p.id); }).size() == 3);
  const auto found = s->read([&](Tx& tx) { return tx.find_refund("acme", "rf-a"); });
  REQUIRE(found);
  CHECK(found->id == first.refund.id);
  CHECK_FALSE(s->read([&](Tx& tx) { return tx.find_payment_by_operation("acme", "payment", "rf-a"); }));
  for (const Payment& listed : s->read([&](Tx& tx) { return tx.list_payments("acme", std::nullopt, 100, std::nullopt); }).payments)
    CHECK_FALSE(listed.refund_of);

  // No such payment for the tenant.
  Payment stranger = p;
  stranger.tenant_id = "globex";
  CHECK(r.refund(stranger, 1).kind == Kind::no_payment);
}

TEST_CASE_TEMPLATE("refunds: DEFERRED until the payment's transition, in the same transaction", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Refunds r{*s};

  // PROCESSING → SUCCEEDED releases the deferred refunds to PROCESSING, submit due now.
  const Payment ok = r.payment(1000);
  const auto deferred = r.refund(ok, 300);
  REQUIRE(deferred.kind == Kind::created);
  CHECK(deferred.refund.deferred);
  CHECK(deferred.refund.next_action == NextAction::none);
  CHECK(as_refund(deferred.refund).state == RefundState::deferred);
  // Nothing moves a DEFERRED refund but its payment: no claim takes it, no transition applies.
  CHECK(s->committed([&](Tx& tx) {
    return tx.claim_due("w", t0 + 500, Millis(30'000), {store::ClaimQuota{"sim", 100}}, 100);
  }).size() == 1);  // the payment only
  CHECK(r.apply(deferred.refund.id, Trigger::submit_succeeded) == CasResult::illegal);
  // The payment goes UNKNOWN: still deferred. Then a lookup finds it succeeded.
  CHECK(r.apply(ok.id, Trigger::submit_ambiguous) == CasResult::applied);
  CHECK(s->payment(deferred.refund.id).deferred);
  const auto released_at = t0 + 40'000;
  CHECK(r.apply(ok.id, Trigger::recovery_succeeded, released_at) == CasResult::applied);
  const Payment released = s->payment(deferred.refund.id);
  CHECK_FALSE(released.deferred);
  CHECK(released.state == PaymentState::processing);
  CHECK(released.next_action == NextAction::submit);
  CHECK(released.next_attempt_at == released_at);
  CHECK(released.updated_at == released_at);
  CHECK(r.event_types(released.id) == std::vector<std::string>{"refund.created", "refund.processing"});

  // PROCESSING → FAILED_FINAL fails them with payment_failed and frees their amounts.
  const Payment declined = r.payment(2000);
  const auto a = r.refund(declined, 1500), b = r.refund(declined, 500);
  REQUIRE(a.kind == Kind::created);
  REQUIRE(b.kind == Kind::created);
  CHECK(r.refund(declined, 1).kind == Kind::exceeds_payment);
  CHECK(r.apply(declined.id, Trigger::submit_declined) == CasResult::applied);
  for (const auto* o : {&a, &b}) {
    const Payment f = s->payment(o->refund.id);
    CHECK(f.state == PaymentState::failed_final);
    CHECK(f.failure_code == "payment_failed");
    CHECK(f.attempt_count == 0);
    CHECK(r.event_types(f.id) == std::vector<std::string>{"refund.created", "refund.failed"});
  }
  CHECK(s->payment(declined.id).amount_reserved_minor == 0);
  CHECK(r.refund(declined, 1).kind == Kind::not_refundable);
}

TEST_CASE_TEMPLATE("refunds: the database refuses refunds above the payment, whatever the writer", D, PAYORCH_STORE_DRIVERS) {
  auto s = store_under_test<D>(t0);
  if (!s) return;
  Refunds r{*s};
  const Payment p = r.payment(1000);
  r.apply(p.id, Trigger::submit_succeeded);
  REQUIRE(r.refund(p, 1000).kind == Kind::created);
  // A writer that skipped the money rule inserts a copy of that refund with its own identities:
  // the refund's insert trigger refuses it, and nothing of it is kept.
  const std::string refund_id = s->read([&](Tx& tx) { return tx.list_refunds(p.id); }).at(0).id;
  const auto raw_copy = [&](const std::string& suffix, const std::string& state) {
    return "INSERT INTO payments (id, tenant_id, operation_type, operation_id, provider, client_key,"
           " request_digest, amount_minor, currency, payee, source, state, next_action, next_attempt_at,"
           " created_at, updated_at, refund_of) SELECT 're_RAW" + suffix + "', tenant_id, operation_type,"
           " 'rf-raw" + suffix + "', provider, 'ck_raw" + suffix + "', request_digest, amount_minor, currency,"
           " payee, source, '" + state + "', 'none', next_attempt_at, created_at, updated_at, refund_of"
           " FROM payments WHERE id = '" + refund_id + "'";
  };
  CHECK_THROWS(s->exec(raw_copy("1", "PROCESSING")));
  CHECK(s->payment(p.id).amount_reserved_minor == 1000);
  CHECK(s->read([&](Tx& tx) { return tx.list_refunds(p.id); }).size() == 1);
  // The same copy as FAILED_FINAL reserves nothing, so it goes in: the trigger is the money
  // rule, not a refusal of every raw insert.
  s->exec(raw_copy("2", "FAILED_FINAL"));
  CHECK(s->payment(p.id).amount_reserved_minor == 1000);
  CHECK(s->read([&](Tx& tx) { return tx.list_refunds(p.id); }).size() == 2);
  // A refund row without its payment, or a payment row deferred, breaks the row's own CHECKs.
  CHECK_THROWS(s->exec("UPDATE payments SET refund_of = NULL WHERE operation_type = 'refund'"));
  CHECK_THROWS(s->exec("UPDATE payments SET deferred = " + std::string(D::driver == Driver::sqlite ? "1" : "true") +
                       " WHERE id = '" + p.id + "'"));
}

}  // namespace payorch::test
