#include "store/refunds.h"

#include "core/digest.h"
#include "core/ids.h"
#include "store/intake.h"
#include "store/payments.h"
#include "store/refund_flow.h"

namespace payorch::store {

Payment new_refund(const RefundIntakeRequest& req, const Payment& payment, RefundState initial,
                   const std::string& request_digest, UnixMillis now, Random& rng) {
  Payment r;
  r.id = new_refund_id(now, rng);
  r.tenant_id = req.tenant_id;
  r.operation_type = "refund";
  r.operation_id = req.intent.operation_id;
  r.provider = payment.provider;
  r.client_key = new_client_key(rng);
  r.request_digest = request_digest;
  r.amount_minor = req.intent.amount_minor;
  r.currency = payment.currency;
  // The money goes back the way it came: from the payee to the source.
  r.payee = payment.payee;
  r.source = payment.source;
  r.description = req.intent.reason;
  r.metadata = req.intent.metadata;
  r.refund_of = RefundOf{payment.id, payment.operation_id, payment.client_key, payment.vendor_reference};
  r.deferred = initial == RefundState::deferred;
  r.state = PaymentState::processing;
  r.next_action = r.deferred ? NextAction::none : NextAction::submit;
  r.next_attempt_at = now;
  r.created_at = now;
  r.updated_at = now;
  r.origin = req.origin;
  return r;
}

IdempotencyConflict refund_conflict(const RefundIntakeRequest& req, const Payment& stored,
                                    const std::string& payment_id, const std::string& attempted_digest,
                                    UnixMillis now) {
  return IdempotencyConflict{req.tenant_id, "refund", req.intent.operation_id, stored.id,
                             stored.request_digest, attempted_digest,
                             jcs_canonicalize(refund_digest_fields(payment_id, req.intent.amount_minor)),
                             now};
}

// The SQLite side of refund_flow.h. The Writer's transaction already excludes every other
// writer, so a read is a lock.
std::optional<Payment> lock_payment_by_operation(Db& db, const std::string& tenant_id,
                                                 const std::string& operation_type,
                                                 const std::string& operation_id) {
  return find_payment_by_operation(db, tenant_id, operation_type, operation_id);
}

std::vector<RefundAmount> refund_amounts(Db& db, const std::string& payment_id) {
  auto st = db.prepare("SELECT amount_minor, state, deferred FROM payments WHERE refund_of = ?");
  st.bind(1, payment_id);
  std::vector<RefundAmount> out;
  while (st.step()) {
    const auto state = parse_payment_state(st.col_text(1));
    if (!state) throw SqliteError(SQLITE_CORRUPT, "refund of " + payment_id + ": bad state");
    out.push_back(RefundAmount{st.col_int(0), st.col_int(2) != 0 ? RefundState::deferred : refund_state(*state)});
  }
  return out;
}

std::vector<std::string> deferred_refund_ids(Db& db, const std::string& payment_id) {
  auto st = db.prepare("SELECT id FROM payments WHERE refund_of = ? AND deferred = 1 ORDER BY id");
  st.bind(1, payment_id);
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.col_text(0));
  return out;
}

std::optional<Payment> release_deferred_refund(Db& db, const std::string& refund_id,
                                               const DeferredRefundStep& step, UnixMillis now) {
  const auto to = protocol_state(step.transition.to);
  auto st = db.prepare(
      "UPDATE payments SET deferred = 0, state = ?1, next_action = ?2, next_attempt_at = ?3,"
      " failure_code = ?4, failure_message = ?5, updated_at = ?3 WHERE id = ?6 AND deferred = 1");
  st.bind(1, to_string(*to)).bind(2, to_string(step.transition.next)).bind(3, now);
  if (step.failure_code) {
    st.bind(4, *step.failure_code);
    st.bind(5, "its payment failed: nothing was charged, nothing is refunded");
  } else {
    st.bind_null(4).bind_null(5);
  }
  st.bind(6, refund_id);
  st.run();
  if (db.changes() != 1) return std::nullopt;
  return find_payment_by_id(db, refund_id);
}

RefundIntakeOutcome record_refund_intake(Db& db, const RefundIntakeRequest& req, UnixMillis now,
                                         Random& rng) {
  return refund_intake_flow(db, req, now, rng);
}

int release_deferred_refunds(Db& db, const std::string& payment_id, PaymentState now_state,
                             UnixMillis now, Random& rng) {
  return release_deferred_flow(db, payment_id, now_state, now, rng);
}

int open_payment_corrected_cases(Db& db, const std::string& payment_id, UnixMillis now, Random& rng) {
  return payment_corrected_flow(db, payment_id, now, rng);
}

bool hold_refund_work(Db& db, const std::string& refund_id, UnixMillis now) {
  auto st = db.prepare(
      "UPDATE payments SET next_action = 'none', updated_at = ?2"
      " WHERE id = ?1 AND refund_of IS NOT NULL AND next_action <> 'none'");
  st.bind(1, refund_id).bind(2, now);
  st.run();
  return db.changes() == 1;
}

std::vector<Payment> list_refunds(Db& db, const std::string& payment_id) {
  auto st = db.prepare(select_payments("WHERE p.refund_of = ? ORDER BY p.id"));
  st.bind(1, payment_id);
  std::vector<Payment> out;
  while (st.step()) out.push_back(read_payment_row(st));
  return out;
}

std::optional<Payment> find_refund(Db& db, const std::string& tenant_id, const std::string& operation_id) {
  return find_payment_by_operation(db, tenant_id, "refund", operation_id);
}

std::vector<std::pair<RefundState, std::int64_t>> count_refunds(Db& db) {
  auto st = db.prepare(
      "SELECT state, deferred, COUNT(*) FROM payments WHERE refund_of IS NOT NULL"
      " GROUP BY state, deferred");
  std::vector<std::pair<RefundState, std::int64_t>> out;
  while (st.step()) {
    const auto state = parse_payment_state(st.col_text(0));
    if (!state) throw SqliteError(SQLITE_CORRUPT, "refund counts: bad state");
    out.emplace_back(st.col_int(1) != 0 ? RefundState::deferred : refund_state(*state), st.col_int(2));
  }
  return out;
}

}  // namespace payorch::store
