#include "store/postgres/callbacks.h"

#include <boost/json/object.hpp>
#include <stdexcept>

#include "core/view.h"
#include "store/postgres/cases.h"

namespace payorch::store::pg {
namespace {

// A final status for a payment this transaction holds locked.
CallbackOutcome apply_final(const WriteTx& w, const VendorCallback& cb, const Payment& p,
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
    out.result = CallbackResult::late_contradiction;
    Held held = hold_with_evidence(w, p, *t, evidence_of(cb, out.result), now, rng);
    out.case_id = held.case_id;
    out.event = held.event;
    return out;
  }
  // Callbacks hold no lease: compare-and-set on the state alone, which the row lock keeps as
  // read; the fence advances, so a worker whose call is in flight finds itself stale.
  out.result = CallbackResult::applied;
  const auto open = find_open_case(w.conn, p.id);
  TransitionUpdate u;
  u.next_attempt_at = now;
  u.release_lease = true;
  u.vendor_reference = cb.vendor_reference;
  if (!success) {
    u.failure_code = cb.decline_code.value_or("declined");
    u.failure_message = "declined by vendor callback";
  }
  apply_unleased(w, p, *t, u, now, rng);
  out.event = t->event;
  if (open) {
    append_evidence(w.conn, open->id, evidence_of(cb, out.result), now);
    out.case_id = open->id;
  }
  return out;
}

CallbackOutcome decide(const WriteTx& w, const VendorCallback& cb, UnixMillis now, Random& rng) {
  CallbackOutcome out;
  auto p = lock_payment_by_client_key(w.conn, cb.provider, cb.client_key);
  if (!p) {
    out.result = CallbackResult::unknown_reference;
    out.case_id = hold_unknown_reference(w.conn, cb.provider, cb.client_key,
                                         evidence_of(cb, out.result), now, rng);
    return out;
  }
  if (differs_from_intent(cb, *p)) {
    out.result = CallbackResult::mismatch;
    Held held = hold_with_evidence(w, *p, mismatch_escalation(p->state),
                                   evidence_of(cb, out.result), now, rng);
    out.case_id = held.case_id;
    out.event = held.event;
  } else if (cb.status == CallbackStatus::pending) {
    out.result = CallbackResult::ignored_pending;
  } else {
    out = apply_final(w, cb, *p, now, rng);
  }
  out.payment_id = p->id;
  return out;
}

}  // namespace

CallbackOutcome record_callback(const WriteTx& w, const VendorCallback& cb, UnixMillis now,
                                Random& rng) {
  // The inbox row first: its primary key makes a redelivery a no-op (invariant 7), decided by
  // the constraint, never by "select, then insert".
  const Result inbox = w.conn.exec(
      "INSERT INTO callback_inbox (provider, event_id, received_at, payment_id, payload, result)"
      " VALUES ($1, $2, $3, NULL, $4, 'received') ON CONFLICT DO NOTHING",
      {cb.provider, cb.event_id, now, cb.payload});
  if (inbox.affected() == 0) {
    // Seen before (and committed: the INSERT waited for it): named for the log line.
    const Result seen = w.conn.exec(
        "SELECT payment_id FROM callback_inbox WHERE provider = $1 AND event_id = $2",
        {cb.provider, cb.event_id});
    std::optional<std::string> payment_id;
    if (seen.rows() > 0) payment_id = seen.opt_text(0, 0);
    return CallbackOutcome{CallbackResult::duplicate, std::move(payment_id), {}, {}};
  }

  CallbackOutcome out = decide(w, cb, now, rng);
  w.conn.exec(
      "UPDATE callback_inbox SET result = $1, payment_id = $2 WHERE provider = $3 AND event_id = $4",
      {to_string(out.result), out.payment_id, cb.provider, cb.event_id});
  // Crash timeline: all of this is the caller's one transaction. Dying before its COMMIT leaves
  // no inbox row, so the vendor's retry (never answered 2xx) is applied afresh; after it, the
  // inbox row, the payment, its case and its outbox event are there together.
  return out;
}

}  // namespace payorch::store::pg
