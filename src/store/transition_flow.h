#pragma once
// What apply_transition writes once its compare-and-set changed the row, written once for both
// drivers (store/transitions.cpp, store/postgres/transitions.cpp): a template over the write
// transaction's connection — store::Db on SQLite, pg::Connection on PostgreSQL — calling free
// functions found for it, each driver's own SQL:
//   open_case, resolve_system_case (store/cases.h), find_payment_by_id, insert_outbox_event
//   (store/payments.h), insert_history (store/history.h), release_deferred_refunds,
//   open_payment_corrected_cases, hold_refund_work (store/refunds.h),
//   refund_held_for_correction, over_refunded_flow (store/refund_flow.h)
#include <cstdint>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "core/view.h"
#include "store/history.h"
#include "store/refund_flow.h"
#include "store/transitions.h"

namespace payorch::store {

struct AppliedStep {
  bool escalated_too = false;  // a case opened on the way to another state: payment.escalated too
  std::optional<Payment> row;  // the row as it is now, when it was read back
};

// `t` was applied to `payment_id` (its UPDATE changed the row; `fence`: the writer's lease
// fence, nullopt for a writer without a lease, whose UPDATE advanced the row's fence). Writes,
// in the caller's transaction: the case the step opens (at most one open per row) or the system
// case it resolves, its outbox events, its history row, and what it does to the row's refunds.
// `updated`: the whole row as that UPDATE left it, when the driver's UPDATE returned it; it
// stands for the read-back unless this step opens or resolves a case (which the row shows).
template <class Handle>
AppliedStep record_applied_step(Handle& h, const std::string& payment_id,
                                std::optional<std::int64_t> fence, const Transition& t,
                                const TransitionUpdate& u, UnixMillis now, Random& rng,
                                std::optional<Payment> updated = std::nullopt) {
  AppliedStep out;
  // At most one open case per payment: an escalation while a case is already open adds nothing.
  bool case_opened = false;
  if (t.open_case) case_opened = open_case(h, payment_id, *t.open_case, now, rng);
  if (t.resolves_system_case) resolve_system_case(h, payment_id, t.to, now);
  // A refund whose payment was corrected records what the vendor said and takes no next action
  // (store/refund_flow.h): the step as written, with the hold.
  Transition step = t;
  if (t.next != NextAction::none && refund_held_for_correction(h, payment_id)) {
    hold_refund_work(h, payment_id, now);
    step.next = NextAction::none;
    if (updated) updated->next_action = NextAction::none;
  }
  // Every case opening is announced by payment.escalated (docs/contract.md §6), after the event
  // of the state the payment arrived in, if that is another one (submit_key_mismatch: UNKNOWN).
  out.escalated_too = case_opened && t.event != EventType::escalated;
  // Read back for the events' views and, for a writer without a lease, the fence it set.
  if (t.event || out.escalated_too || !fence)
    out.row = updated && !t.open_case && !t.resolves_system_case ? std::move(updated)
                                                                 : find_payment_by_id(h, payment_id);
  std::optional<EventType> first_event = t.event;
  std::optional<std::string> event_id;
  if (t.event) event_id = insert_outbox_event(h, *t.event, *out.row, now, rng, u.request_id);
  if (out.escalated_too) {
    std::string id = insert_outbox_event(h, EventType::escalated, *out.row, now, rng, u.request_id);
    if (!first_event) {
      first_event = EventType::escalated;
      event_id = std::move(id);
    }
  }
  std::optional<std::string_view> type;
  if (first_event) type = event_type(*first_event, *out.row);
  // The step's history row, before those of the refunds it moves.
  insert_history(h, transition_entry(payment_id, step, fence ? *fence : out.row->fence, type,
                                     std::move(event_id), case_opened, u.request_id, now));
  // A payment's DEFERRED refunds move in its own transaction (docs/refunds.md).
  if (t.changes_state() && is_terminal(t.to)) release_deferred_refunds(h, payment_id, t.to, now, rng);
  // A correction of a payment its refunds relied on puts each live one in front of a human
  // (docs/refunds.md). Only payments have refunds; a refund row finds none.
  if (t.from == PaymentState::succeeded && t.to == PaymentState::failed_final)
    open_payment_corrected_cases(h, payment_id, now, rng);
  // A refund that left FAILED_FINAL takes its amount again, even past its payment's: the
  // payment goes in front of a human (docs/refunds.md). A payment row finds no payment above it.
  if (t.from == PaymentState::failed_final && t.to != PaymentState::failed_final)
    over_refunded_flow(h, payment_id, now, rng);
  return out;
}

}  // namespace payorch::store
