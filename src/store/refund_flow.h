#pragma once
// The refund decisions (docs/refunds.md), written once for both drivers, as templates over the
// write transaction's connection — store::Db on SQLite, pg::Connection on PostgreSQL — calling
// free functions found for it, each driver's own SQL and locking:
//   lock_payment_by_operation(h, tenant, type, op)  the row, read so that it cannot change
//                                   before the transaction ends (SQLite's Writer excludes every
//                                   other writer; PostgreSQL: FOR UPDATE). Two refunds of one
//                                   payment so take turns, and the money rule of each reads the
//                                   other's row if it committed first.
//   find_payment_by_operation, refund_amounts, insert_operation_if_new, insert_outbox_event,
//   insert_idempotency_conflict, deferred_refund_ids, release_deferred_refund
#include <string>
#include <vector>

#include "core/digest.h"
#include "core/refund.h"
#include "core/refund_state.h"
#include "store/intake.h"
#include "store/refunds.h"

namespace payorch::store {

// The idempotency_conflicts row of a refund request whose key is stored with another digest.
IdempotencyConflict refund_conflict(const RefundIntakeRequest& req, const Payment& stored,
                                    const std::string& payment_id, const std::string& attempted_digest,
                                    UnixMillis now);

template <class Handle>
RefundIntakeOutcome refund_intake_flow(Handle& h, const RefundIntakeRequest& req, UnixMillis now,
                                       Random& rng) {
  using Kind = RefundIntakeOutcome::Kind;
  RefundIntakeOutcome out;
  auto payment = lock_payment_by_operation(h, req.tenant_id, "payment", req.payment_operation_id);
  if (!payment) {
    out.kind = Kind::no_payment;
    return out;
  }
  out.attempted_digest = refund_request_digest(payment->id, req.intent.amount_minor);
  // A collision of the random id or client_key is retried with fresh values; a collision of
  // the business key is the idempotency decision.
  for (int attempt = 0;; ++attempt) {
    if (auto stored = find_payment_by_operation(h, req.tenant_id, "refund", req.intent.operation_id)) {
      out.refund = std::move(*stored);
      if (out.refund.request_digest == out.attempted_digest) {
        out.kind = Kind::replayed;
      } else {
        out.kind = Kind::conflict;
        insert_idempotency_conflict(
            h, refund_conflict(req, out.refund, payment->id, out.attempted_digest, now));
      }
      return out;
    }
    const std::vector<RefundAmount> refunds = refund_amounts(h, payment->id);
    const RefundAdmission admission =
        admit_refund(payment->amount_minor, payment->state, refunds, req.intent.amount_minor);
    out.remaining_minor = admission.remaining_minor;
    if (admission.kind == RefundAdmission::Kind::payment_not_refundable) {
      out.kind = Kind::not_refundable;
      return out;
    }
    if (!admission.accepted()) {  // exceeds_payment (intake validation refused bad amounts)
      out.kind = Kind::exceeds_payment;
      return out;
    }
    Payment row = new_refund(req, *payment, *admission.initial_state(), out.attempted_digest, now, rng);
    if (insert_operation_if_new(h, row)) {
      insert_outbox_event(h, EventType::created, row, now, rng);
      out.kind = Kind::created;
      out.refund = std::move(row);
      return out;
    }
    if (attempt >= 3) throw std::runtime_error("refund intake: unique violation without a stored refund");
  }
}

template <class Handle>
int release_deferred_flow(Handle& h, const std::string& payment_id, PaymentState now_state,
                          UnixMillis now, Random& rng) {
  const auto step = deferred_refund_step(now_state);
  if (!step) return 0;
  int moved = 0;
  for (const std::string& id : deferred_refund_ids(h, payment_id)) {
    if (auto row = release_deferred_refund(h, id, *step, now)) {
      insert_outbox_event(h, *step->transition.event, *row, now, rng);
      ++moved;
    }
  }
  return moved;
}

}  // namespace payorch::store
