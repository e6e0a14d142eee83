#pragma once
// A verified callback's decision flow, written once for both drivers: what store::record_callback
// (store/callbacks.h) decides once the callback's inbox row is new, in the caller's write
// transaction. It is a template over that transaction's handle — store::Db on SQLite,
// const pg::WriteTx on PostgreSQL (store/postgres/flow_handle.h) — and calls free functions found
// for the handle, each driver's own, with its own SQL and locking:
//   lock_payment_by_client_key(h, provider, key)  the named payment, read so that it cannot
//                                   change before the callback ends (SQLite's Writer already
//                                   excludes every other writer; PostgreSQL: FOR UPDATE), so
//                                   callbacks about one payment each decide on the state the
//                                   other left
//   hold_unknown_reference, hold_with_evidence, find_open_case, append_evidence (store/cases.h),
//   apply_unleased (store/transitions.h)
// The inbox row itself (its INSERT ... ON CONFLICT and the result written back) stays with each
// driver's record_callback.
#include <stdexcept>
#include <string>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/callbacks.h"
#include "store/cases.h"
#include "store/transitions.h"

namespace payorch::store {

// A final status for a payment this transaction holds: applied, confirmed, or a late
// contradiction.
template <class Handle>
CallbackOutcome apply_final_callback(Handle& h, const VendorCallback& cb, const Payment& p,
                                     UnixMillis now, Random& rng) {
  CallbackOutcome out;
  const bool success = cb.status == CallbackStatus::succeeded;
  auto t = transition(p.state, success ? Trigger::callback_succeeded : Trigger::callback_declined);
  if (!t) throw std::logic_error("callback transition refused from " + std::string(to_string(p.state)));
  if (t->noop()) {
    out.result = CallbackResult::confirmed;
    return out;
  }
  if (t->open_case) {
    // Terminal and contradicted (invariant 4: the state stands); an already open case gets the
    // callback instead of a second payment.escalated.
    out.result = CallbackResult::late_contradiction;
    Held held = hold_with_evidence(h, p, *t, evidence_of(cb, out.result), now, rng);
    out.case_id = held.case_id;
    out.event = held.event;
    return out;
  }
  // Non-terminal: the vendor's final word. Callbacks hold no lease, so the compare-and-set is
  // on the state alone, which this transaction keeps as read; the lease is released and the
  // fence advances, so a worker whose call is still in flight finds itself stale when it
  // reports.
  out.result = CallbackResult::applied;
  const auto open = find_open_case(h, p.id);  // a system case the transition may resolve
  TransitionUpdate u;
  u.next_attempt_at = now;
  u.release_lease = true;
  u.vendor_reference = cb.vendor_reference;
  u.request_id = cb.request_id;
  if (!success) {
    u.failure_code = cb.decline_code.value_or("declined");
    u.failure_message = "declined by vendor callback";
  }
  // The state was read in this transaction, so anything but `applied` means the database is
  // not what this code believes: apply_unleased throws, and the whole callback (inbox row too)
  // rolls back.
  apply_unleased(h, p, *t, u, now, rng);
  out.event = t->event;
  if (open) {
    // Resolved by `system` when it was a retry_budget_exhausted / unrecoverable_contract /
    // key_retention_expiring case, still open otherwise: either way the callback is its record.
    append_evidence(h, open->id, evidence_of(cb, out.result), now);
    out.case_id = open->id;
  }
  return out;
}

// The callback judged against the payment it names (the inbox row is the caller's).
template <class Handle>
CallbackOutcome decide_callback(Handle& h, const VendorCallback& cb, UnixMillis now, Random& rng) {
  CallbackOutcome out;
  auto p = lock_payment_by_client_key(h, cb.provider, cb.client_key);
  if (p && p->deferred) {
    // A DEFERRED refund was never sent, so no vendor can report on it: held as a case about the
    // reference, the refund untouched (it moves only with its payment, docs/refunds.md).
    out.result = CallbackResult::mismatch;
    out.case_id = hold_unknown_reference(h, cb.provider, cb.client_key, evidence_of(cb, out.result), now, rng);
    return out;
  }
  if (!p) {
    out.result = CallbackResult::unknown_reference;
    out.case_id = hold_unknown_reference(h, cb.provider, cb.client_key,
                                         evidence_of(cb, out.result), now, rng);
    return out;
  }
  // A charge's event naming a refund's key, or the other way round, is a mismatch like any
  // other difference from the intent.
  if (differs_from_intent(cb, *p) || cb.about_refund != p->refund_of.has_value()) {
    out.result = CallbackResult::mismatch;
    Held held = hold_with_evidence(h, *p, mismatch_escalation(p->state),
                                   evidence_of(cb, out.result), now, rng);
    out.case_id = held.case_id;
    out.event = held.event;
  } else if (cb.status == CallbackStatus::pending) {
    out.result = CallbackResult::ignored_pending;
  } else {
    out = apply_final_callback(h, cb, *p, now, rng);
  }
  out.payment_id = p->id;
  return out;
}

}  // namespace payorch::store
