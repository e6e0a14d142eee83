#include "store/callbacks.h"

#include <boost/json/object.hpp>
#include <stdexcept>

#include "core/enum_names.h"
#include "core/view.h"
#include "store/payments.h"
#include "store/transitions.h"
#include "store/cases.h"

namespace payorch::store {
namespace {

constexpr EnumNames<CallbackStatus, 3> status_names{{
    {CallbackStatus::succeeded, "succeeded"},
    {CallbackStatus::declined, "declined"},
    {CallbackStatus::pending, "pending"},
}};

constexpr EnumNames<CallbackResult, 7> result_names{{
    {CallbackResult::applied, "applied"},
    {CallbackResult::duplicate, "duplicate"},
    {CallbackResult::confirmed, "confirmed"},
    {CallbackResult::ignored_pending, "ignored_pending"},
    {CallbackResult::late_contradiction, "late_contradiction"},
    {CallbackResult::mismatch, "mismatch"},
    {CallbackResult::unknown_reference, "unknown_reference"},
}};

// A final status for a payment we hold: applied, confirmed, or a late contradiction.
CallbackOutcome apply_final(Db& db, const VendorCallback& cb, const Payment& p, UnixMillis now,
                            Random& rng) {
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
    Held held = hold_with_evidence(db, p, *t, evidence_of(cb, out.result), now, rng);
    out.case_id = held.case_id;
    out.event = held.event;
    return out;
  }
  // Non-terminal: the vendor's final word. Callbacks hold no lease, so the compare-and-set is
  // on the state alone; the lease is released, and a worker whose call is still in flight
  // finds the state moved when it reports (already_in_state, or illegal for the other answer).
  out.result = CallbackResult::applied;
  const auto open = find_open_case(db, p.id);  // a system case the transition may resolve
  TransitionUpdate u;
  u.next_attempt_at = now;
  u.release_lease = true;
  u.vendor_reference = cb.vendor_reference;
  if (!success) {
    u.failure_code = cb.decline_code.value_or("declined");
    u.failure_message = "declined by vendor callback";
  }
  // The state was read in this transaction, so anything but `applied` means the database is
  // not what this code believes: throw, and the whole callback (inbox row too) rolls back.
  const CasResult r = apply_transition(db, p.id, std::nullopt, *t, u, now, rng);
  if (r != CasResult::applied)
    throw std::runtime_error("callback " + cb.event_id + " on payment " + p.id + ": " +
                             std::string(to_string(r)));
  out.event = t->event;
  if (open) {
    // Resolved by `system` when it was a retry_budget_exhausted / unrecoverable_contract /
    // key_retention_expiring case, still open otherwise: either way the callback is its record.
    append_evidence(db, open->id, evidence_of(cb, out.result), now);
    out.case_id = open->id;
  }
  return out;
}

CallbackOutcome decide(Db& db, const VendorCallback& cb, UnixMillis now, Random& rng) {
  CallbackOutcome out;
  auto p = find_payment_by_client_key(db, cb.provider, cb.client_key);
  if (!p) {
    out.result = CallbackResult::unknown_reference;
    out.case_id = hold_unknown_reference(db, cb.provider, cb.client_key, evidence_of(cb, out.result),
                                         now, rng);
    return out;
  }
  if (differs_from_intent(cb, *p)) {
    out.result = CallbackResult::mismatch;
    Held held = hold_with_evidence(db, *p, mismatch_escalation(p->state), evidence_of(cb, out.result),
                                   now, rng);
    out.case_id = held.case_id;
    out.event = held.event;
  } else if (cb.status == CallbackStatus::pending) {
    out.result = CallbackResult::ignored_pending;
  } else {
    out = apply_final(db, cb, *p, now, rng);
  }
  out.payment_id = p->id;
  return out;
}

}  // namespace

// The callback as a case sees it: what the vendor said, and the raw body it said it in.
boost::json::object evidence_of(const VendorCallback& cb, CallbackResult finding) {
  boost::json::object e{{"source", "callback"},
                        {"finding", to_string(finding)},
                        {"provider", cb.provider},
                        {"event_id", cb.event_id},
                        {"reference", cb.client_key},
                        {"status", to_string(cb.status)},
                        {"payload", cb.payload}};
  e["amount_minor"] = cb.amount_minor ? boost::json::value(*cb.amount_minor) : nullptr;
  e["currency"] = json_or_null(cb.currency);
  e["vendor_reference"] = json_or_null(cb.vendor_reference);
  e["decline_code"] = json_or_null(cb.decline_code);
  return e;
}

// The vendor reports an amount or currency other than the intent. Only what the callback
// carries is compared: a vendor that omits them is not contradicting anything.
bool differs_from_intent(const VendorCallback& cb, const Payment& p) {
  return (cb.amount_minor && *cb.amount_minor != p.amount_minor) ||
         (cb.currency && *cb.currency != p.currency);
}

std::string_view to_string(CallbackStatus s) { return name_of(status_names, s); }

std::string_view to_string(CallbackResult r) { return name_of(result_names, r); }

CallbackOutcome record_callback(Db& db, const VendorCallback& cb, UnixMillis now, Random& rng) {
  // The inbox row first: its primary key (provider, event_id) is what makes a redelivery a
  // no-op (invariant 7), decided by the constraint, never by "select, then insert".
  auto inbox = db.prepare(
      "INSERT INTO callback_inbox (provider, event_id, received_at, payment_id, payload, result)"
      " VALUES (?1, ?2, ?3, NULL, ?4, 'received') ON CONFLICT DO NOTHING");
  inbox.bind(1, cb.provider).bind(2, cb.event_id).bind(3, now).bind(4, cb.payload);
  inbox.run();
  if (db.changes() == 0) {
    // Seen before: nothing is written, but the answer (and its log line) still names the
    // payment the first delivery was about, so a redelivery can be traced to it.
    auto seen = db.prepare("SELECT payment_id FROM callback_inbox WHERE provider = ?1 AND event_id = ?2");
    seen.bind(1, cb.provider).bind(2, cb.event_id);
    std::optional<std::string> payment_id;
    if (seen.step()) payment_id = seen.col_opt_text(0);
    return CallbackOutcome{CallbackResult::duplicate, std::move(payment_id), {}, {}};
  }

  CallbackOutcome out = decide(db, cb, now, rng);
  db.prepare(
        "UPDATE callback_inbox SET result = ?1, payment_id = ?2"
        " WHERE provider = ?3 AND event_id = ?4")
      .bind(1, to_string(out.result))
      .bind(2, out.payment_id)
      .bind(3, cb.provider)
      .bind(4, cb.event_id)
      .run();
  // Crash timeline: all of the above is the caller's one transaction. Dying before its commit
  // leaves no inbox row, so the vendor's retry (we never answered 2xx) is applied afresh;
  // after it, the inbox row, the payment, its case and its outbox event are there together
  // and every redelivery is a duplicate.
  return out;
}

}  // namespace payorch::store
