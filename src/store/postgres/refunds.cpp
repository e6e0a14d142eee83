#include "store/postgres/refunds.h"

#include "store/postgres/cases.h"
#include "store/postgres/history.h"
#include "store/postgres/payments.h"
#include "store/refund_flow.h"

namespace payorch::store::pg {

// The PostgreSQL side of store/refund_flow.h.
std::optional<Payment> lock_payment_by_operation(Connection& conn, const std::string& tenant_id,
                                                 const std::string& operation_type,
                                                 const std::string& operation_id) {
  // The lock first, then the whole row by a statement of its own, whose snapshot is taken after
  // the lock was granted (as lock_payment does).
  const Result r = conn.exec(
      "SELECT id FROM payments WHERE tenant_id = $1 AND operation_type = $2 AND operation_id = $3"
      " FOR UPDATE",
      {tenant_id, operation_type, operation_id});
  if (r.rows() == 0) return std::nullopt;
  return find_payment_by_id(conn, r.text(0, 0));
}

std::vector<RefundAmount> refund_amounts(Connection& conn, const std::string& payment_id) {
  const Result r = conn.exec(
      "SELECT amount_minor, state, CAST(deferred AS INTEGER) FROM payments WHERE refund_of = $1",
      {payment_id});
  std::vector<RefundAmount> out;
  for (int row = 0; row < r.rows(); ++row) {
    const auto state = parse_payment_state(r.text(row, 1));
    if (!state) throw Error(ErrorKind::other, "", "", "refund of " + payment_id + ": bad state");
    out.push_back(RefundAmount{r.integer(row, 0),
                               r.integer(row, 2) != 0 ? RefundState::deferred : refund_state(*state)});
  }
  return out;
}

std::vector<std::string> deferred_refund_ids(Connection& conn, const std::string& payment_id) {
  const Result r = conn.exec(
      "SELECT id FROM payments WHERE refund_of = $1 AND deferred ORDER BY id", {payment_id});
  std::vector<std::string> out;
  for (int row = 0; row < r.rows(); ++row) out.push_back(r.text(row, 0));
  return out;
}

std::optional<Payment> release_deferred_refund(Connection& conn, const std::string& refund_id,
                                               const DeferredRefundStep& step, UnixMillis now) {
  const auto to = protocol_state(step.transition.to);
  std::optional<std::string> code, message;
  if (step.failure_code) {
    code = std::string(*step.failure_code);
    message = "its payment failed: nothing was charged, nothing is refunded";
  }
  const Result r = conn.exec(
      "UPDATE payments SET deferred = false, state = $1, next_action = $2, next_attempt_at = $3,"
      " failure_code = $4, failure_message = $5, updated_at = $3 WHERE id = $6 AND deferred",
      {std::string(to_string(*to)), std::string(to_string(step.transition.next)), now, code, message,
       refund_id});
  if (r.affected() != 1) return std::nullopt;
  return find_payment_by_id(conn, refund_id);
}

RefundIntakeOutcome record_refund_intake(Connection& conn, const RefundIntakeRequest& req,
                                         UnixMillis now, Random& rng) {
  return refund_intake_flow(conn, req, now, rng);
}

int release_deferred_refunds(Connection& conn, const std::string& payment_id, PaymentState now_state,
                             UnixMillis now, Random& rng) {
  return release_deferred_flow(conn, payment_id, now_state, now, rng);
}

int open_payment_corrected_cases(Connection& conn, const std::string& payment_id, UnixMillis now,
                                 Random& rng) {
  return payment_corrected_flow(conn, payment_id, now, rng);
}

bool hold_refund_work(Connection& conn, const std::string& refund_id, UnixMillis now) {
  return conn.exec("UPDATE payments SET next_action = 'none', updated_at = $2"
                   " WHERE id = $1 AND refund_of IS NOT NULL AND next_action <> 'none'",
                   {refund_id, now})
             .affected() == 1;
}

std::vector<Payment> list_refunds(Connection& conn, const std::string& payment_id) {
  const Result r = conn.exec(select_payments("WHERE p.refund_of = $1 ORDER BY p.id"), {payment_id});
  std::vector<Payment> out;
  for (int row = 0; row < r.rows(); ++row) out.push_back(read_payment_row(r, row));
  return out;
}

std::optional<Payment> find_refund(Connection& conn, const std::string& tenant_id,
                                   const std::string& operation_id) {
  return find_payment_by_operation(conn, tenant_id, "refund", operation_id);
}

std::vector<std::pair<RefundState, std::int64_t>> count_refunds(Connection& conn) {
  const Result r = conn.exec(
      "SELECT state, CAST(deferred AS INTEGER), COUNT(*) FROM payments WHERE refund_of IS NOT NULL"
      " GROUP BY state, deferred");
  std::vector<std::pair<RefundState, std::int64_t>> out;
  for (int row = 0; row < r.rows(); ++row) {
    const auto state = parse_payment_state(r.text(row, 0));
    if (!state) throw Error(ErrorKind::other, "", "", "refund counts: bad state");
    out.emplace_back(r.integer(row, 1) != 0 ? RefundState::deferred : refund_state(*state),
                     r.integer(row, 2));
  }
  return out;
}

}  // namespace payorch::store::pg
