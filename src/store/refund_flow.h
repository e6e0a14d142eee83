#pragma once
// The refund decisions (docs/refunds.md), written once for both drivers, as templates over the
// write transaction's connection — store::Db on SQLite, pg::Connection on PostgreSQL — calling
// free functions found for it, each driver's own SQL and locking:
//   lock_payment_by_operation(h, tenant, type, op)  the row, read so that it cannot change
//                                   before the transaction ends (SQLite's Writer excludes every
//                                   other writer; PostgreSQL: FOR UPDATE). Two refunds of one
//                                   payment so take turns, and the money rule of each reads the
//                                   other's row if it committed first.
//   find_payment_by_operation, refund_amounts, insert_created (store/intake.h), insert_outbox_event,
//   insert_idempotency_conflict, deferred_refund_ids, release_deferred_refund, list_refunds,
//   find_payment_by_id, open_case, append_open_case_evidence, find_open_case (store/cases.h),
//   insert_history (store/history.h), hold_refund_work
#include <boost/json/object.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/digest.h"
#include "core/ids.h"
#include "core/refund.h"
#include "core/refund_state.h"
#include "store/cases.h"
#include "store/history.h"
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
    if (insert_created(h, row, now, rng)) {
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
      const std::string event_id = insert_outbox_event(h, *step->transition.event, *row, now, rng);
      insert_history(h, released_entry(*row, now_state, *step, event_id, now));
      ++moved;
    }
  }
  return moved;
}

// Whether the row `id` is a refund whose payment_corrected case is open (or whose open case got
// that evidence, when one was open before the correction): its automatic work is
// held (no submit, query or close is claimed for it) until a human resolves that case. A step
// recorded on it meanwhile — the answer of a call that was already on the wire — keeps its
// state and takes no next action (store/transition_flow.h).
template <class Handle>
bool refund_held_for_correction(Handle& h, const std::string& id) {
  if (!id.starts_with(refund_id_prefix)) return false;
  const auto open = find_open_case(h, id);
  if (!open) return false;
  const std::string_view reason = to_string(CaseReason::payment_corrected);
  if (open->reason == reason) return true;
  // A refund already in front of a human when its payment was corrected: the evidence says so.
  for (const boost::json::value& e : open->evidence) {
    const boost::json::value* source = e.is_object() ? e.get_object().if_contains("source") : nullptr;
    if (source && source->is_string() && source->get_string() == reason) return true;
  }
  return false;
}

// Puts the row `row_id`, whose own state does not change, in front of a human because of a
// change to another row: a `reason` case with `evidence`, payment.escalated / refund.escalated and
// its history row. One open case per row (a unique index): a row already in front of a human
// gets the evidence on that case, and no second event. The insert decides it under that index,
// whatever another transaction is doing to the row's cases. True when a case was opened.
template <class Handle>
bool escalate_unchanged_row(Handle& h, const std::string& row_id, CaseReason reason,
                            const boost::json::object& evidence, UnixMillis now, Random& rng) {
  const bool opened_here = open_case(h, row_id, reason, now, rng);
  if (!opened_here && append_open_case_evidence(h, row_id, evidence, now)) return false;
  // (Not opened here and no case open any more: it was resolved in between; open one now.)
  if (!opened_here) open_case(h, row_id, reason, now, rng);
  append_open_case_evidence(h, row_id, evidence, now);
  // Re-read so the event's view shows the case.
  const Payment now_row = *find_payment_by_id(h, row_id);
  const std::string event_id = insert_outbox_event(h, EventType::escalated, now_row, now, rng);
  insert_history(h, escalation_entry(now_row, reason, event_id, now));
  return true;
}

// Called by apply_transition once a payment's correction from SUCCEEDED to FAILED_FINAL has been
// written, in that transaction (docs/refunds.md): each of its refunds not FAILED_FINAL gets a
// payment_corrected case with refund.escalated, or, when one is open already, the evidence on
// it, and a live one loses its automatic work: sending or asking again about the refund of a
// payment that failed is a human's call. The refunds keep their states: whether money went back
// is a human's question too. Returns how many cases were opened.
template <class Handle>
int payment_corrected_flow(Handle& h, const std::string& payment_id, UnixMillis now, Random& rng) {
  int opened = 0;
  for (const Payment& refund : list_refunds(h, payment_id)) {
    if (refund.state == PaymentState::failed_final) continue;
    if (!is_terminal(refund.state)) hold_refund_work(h, refund.id, now);
    const boost::json::object evidence{
        {"source", "payment_corrected"},
        {"payment_id", payment_id},
        {"refund_state", to_string(refund.state)},
        {"detail", "the refunded payment was corrected from SUCCEEDED to FAILED_FINAL"}};
    if (escalate_unchanged_row(h, refund.id, CaseReason::payment_corrected, evidence, now, rng)) ++opened;
  }
  return opened;
}

// Called by apply_transition once the row `refund_id` left FAILED_FINAL (an operator's
// resolution or a settlement file recorded that the vendor refunded it after all), in that
// transaction. Money that left is always recorded, so the refund keeps its new state even when
// the amount it had freed was taken by a newer refund; a payment whose refunds not FAILED_FINAL
// now exceed its amount gets an over_refunded case with payment.escalated, or, when a case is
// open on it already, the evidence on that one (docs/refunds.md). True when a case was opened.
template <class Handle>
bool over_refunded_flow(Handle& h, const std::string& refund_id, UnixMillis now, Random& rng) {
  if (!refund_id.starts_with(refund_id_prefix)) return false;
  const auto refund = find_payment_by_id(h, refund_id);
  if (!refund || !refund->refund_of) return false;
  const auto payment = find_payment_by_id(h, refund->refund_of->id);
  if (!payment || payment->amount_reserved_minor <= payment->amount_minor) return false;
  const std::string detail =
      "refund " + refund->id + " was recorded as " + std::string(to_string(refund->state)) +
      " after its amount was freed: the payment's refunds not FAILED_FINAL total " +
      std::to_string(payment->amount_reserved_minor) + " of its " + std::to_string(payment->amount_minor);
  const boost::json::object evidence{
      {"source", "over_refunded"},
      {"refund_id", refund->id},
      {"refund_state", to_string(refund->state)},
      {"amount_minor", payment->amount_minor},
      {"amount_reserved_minor", payment->amount_reserved_minor},
      {"amount_refunded_minor", payment->amount_refunded_minor},
      {"detail", detail}};
  return escalate_unchanged_row(h, payment->id, CaseReason::over_refunded, evidence, now, rng);
}

}  // namespace payorch::store
