#pragma once
// resolve_case's decision flow, written once for both drivers: store::resolve_case's contract
// (store/resolution.h), in the caller's write transaction. It is a template over that
// transaction's handle — store::Db on SQLite, const pg::WriteTx on PostgreSQL
// (store/postgres/flow_handle.h) — and calls free functions found for the handle, each driver's
// own, with its own SQL and locking:
//   lock_case(h, case_id)             the case, read so that its status cannot change before the
//                                     transaction ends: SQLite's Writer already excludes every
//                                     other writer; PostgreSQL takes the payment's row lock, then
//                                     the case's (FOR UPDATE), so of two resolutions at once the
//                                     second reads the first's result and is refused
//   close_case(h, rc, r, now)         the case resolved (a conditional UPDATE that must change
//                                     one row), with the resolution's evidence appended
//   start_fresh_budget(h, id, now)    retry's fresh budget
//   request_stop(h, id, now)          failed_final on a provider that closes orders
//   clear_failure(h, id)              an earlier failure cleared
//   find_case, find_payment_by_id, apply_unleased (store/transitions.h)
#include <optional>
#include <stdexcept>
#include <string>

#include "core/clock.h"
#include "core/decide.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/resolution.h"
#include "store/transitions.h"

namespace payorch::store {

template <class Handle>
ResolveResult resolve_case_on(Handle& h, const std::string& case_id, const Resolution& r,
                              const Contract& contract, UnixMillis now, Random& rng) {
  using Code = ResolveRefusal::Code;
  auto rc = lock_case(h, case_id);
  if (!rc) return ResolveRefusal{Code::case_not_found, "no reconciliation case " + case_id};
  if (rc->status != CaseStatus::open)
    return ResolveRefusal{Code::case_not_open, "case " + case_id + " was already resolved (" +
                                                   rc->outcome.value_or("?") + ") by " +
                                                   rc->resolved_by.value_or("?") + " at " +
                                                   format_rfc3339(rc->resolved_at.value_or(0))};
  if (!rc->payment_id) {
    // A charge no payment of ours matched: the operator's decision is the record; there is
    // no payment to change and no tenant to tell.
    if (r.outcome == ResolutionOutcome::retry)
      return ResolveRefusal{Code::retry_not_allowed, *retry_refusal(*rc, nullptr, &contract, now)};
    close_case(h, *rc, r, now);
    Resolved out;
    out.resolved_case = *find_case(h, case_id);
    return out;
  }
  // The row the case is about: a refund's case resolves the refund, never its payment.
  const std::string& row_id = *case_row_id(*rc);
  auto p = find_payment_by_id(h, row_id);
  if (!p) throw std::runtime_error("case " + case_id + ": payment " + row_id + " missing");

  // Decide everything before the first write: a refusal writes nothing.
  std::optional<Transition> t;
  TransitionUpdate u;
  u.next_attempt_at = now;
  u.vendor_reference = r.vendor_reference;
  u.request_id = r.request_id;
  // failed_final on a provider that closes orders (Contract::confirmed_close), for a payment
  // whose key may have reached the vendor: the vendor is asked to close the order and then
  // to show it closed and unpaid before FAILED_FINAL is recorded; a paid order opens a new
  // case. The case closes now; the payment keeps its state until the vendor has answered.
  const bool stop_at_vendor = r.outcome == ResolutionOutcome::failed_final && contract.confirmed_close &&
                              !p->refund_of && p->first_submit_at && !is_terminal(p->state);
  if (stop_at_vendor) {
    t = resume(p->state, true);
    u.release_lease = false;  // as for retry: a call on the wire keeps its lease, and is fenced out
  } else if (r.outcome == ResolutionOutcome::retry) {
    if (auto why = retry_refusal(*rc, &*p, &contract, now))
      return ResolveRefusal{Code::retry_not_allowed, *why};
    t = resume(p->state, p->vendor_reference.has_value());
    // A lease still held (a case that did not stop automatic work) stays with its holder:
    // releasing it could let a second worker send the same key while the first call is on
    // the wire.
    u.release_lease = false;
  } else {
    const bool success = r.outcome == ResolutionOutcome::succeeded;
    const PaymentState target = success ? PaymentState::succeeded : PaymentState::failed_final;
    // Already there (only a terminal payment can be): the case closes with no write to the
    // payment and no event — nothing about the payment changed.
    if (p->state != target) {
      t = transition(p->state, success ? Trigger::resolve_succeeded : Trigger::resolve_failed_final);
      if (!success) {
        u.failure_code = "reconciliation_failed";
        u.failure_message = "marked failed by reconciliation case " + case_id;
      }
    }
  }
  // resolve_* is legal from every state and resolve_retry from every non-terminal one.
  if (r.outcome == ResolutionOutcome::retry && !t)
    throw std::logic_error("resolve_retry refused from " + std::string(to_string(p->state)));

  // The case closes first, so the outbox event's payment view already shows it resolved.
  close_case(h, *rc, r, now);
  if (t) {
    if (stop_at_vendor) {
      request_stop(h, p->id, now);
    } else if (r.outcome == ResolutionOutcome::retry) {
      // A fresh budget: max_attempts and give_up_after count from now. Key retention still
      // counts from first_submit_at (checked above): the vendor's clock does not reset.
      start_fresh_budget(h, p->id, now);
    } else if (t->to == PaymentState::succeeded) {
      // A failure left from an earlier FAILED_FINAL no longer describes the payment.
      clear_failure(h, p->id);
    }
    u.next_action = t->next;
    apply_unleased(h, *p, *t, u, now, rng);
  }
  // Crash timeline: nothing above is visible until the caller commits. Dying before the
  // commit leaves the case open and the payment as it was (the operator resolves again);
  // after it, the case, the payment and its outbox event are all there together.
  Resolved out;
  out.resolved_case = *find_case(h, case_id);
  out.payment = *find_payment_by_id(h, p->id);
  if (t) out.event = t->event;
  return out;
}

}  // namespace payorch::store
