#pragma once
// Verified vendor callbacks (docs/contract.md §6), applied in one transaction: the vendor's event id goes
// into the inbox (unique per provider), the transition is applied by compare-and-set, and its
// outbox event is written — or nothing happens at all. The signature was checked before this
// (providers::Adapter::verify_and_parse); this is the part that must survive duplicates,
// reordering and races with the engine's own calls (seed 003: six retries of one callback sent
// six coupons).
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/sqlite.h"

namespace payorch::store {

enum class CallbackStatus { succeeded, declined, pending };
std::string_view to_string(CallbackStatus s);  // "succeeded", "declined", "pending"

// What the vendor said, after the adapter verified and parsed it.
struct VendorCallback {
  std::string provider;    // from the path: /v1/callbacks/{provider}
  std::string event_id;    // the vendor's delivery id (inbox key, with provider)
  std::string client_key;  // our reference, as the vendor echoes it
  bool about_refund = false;  // a refund's event (its client_key is the refund's)
  CallbackStatus status = CallbackStatus::pending;
  std::optional<std::string> vendor_reference;
  std::optional<std::string> decline_code;
  std::optional<std::int64_t> amount_minor;  // as the vendor reports it; checked against the intent
  std::optional<std::string> currency;
  std::string payload;  // the raw body, kept in the inbox and as case evidence
  std::optional<std::string> request_id;  // the callback request's X-Request-Id
};

enum class CallbackResult {
  applied,            // a final status decided a non-terminal payment (one event written)
  duplicate,          // this (provider, event_id) was seen before: nothing at all happened
  confirmed,          // a final status agreeing with the terminal state: no-op
  ignored_pending,    // "pending": never moves a payment (a lower status after a higher one,
                      // or news the engine already acts on)
  late_contradiction, // a final status contradicting the terminal state: state unchanged, case
  mismatch,           // amount or currency differ from the intent: callback_mismatch case
  unknown_reference,  // no payment of this provider has that client_key: callback_mismatch case
};
std::string_view to_string(CallbackResult r);  // "applied", "duplicate", ...

struct CallbackOutcome {
  CallbackResult result = CallbackResult::duplicate;
  std::optional<std::string> payment_id;
  std::optional<std::string> case_id;     // the case opened (or given evidence) by this callback
  std::optional<EventType> event;         // the outbox event written, if any
};

// Applies one verified callback in the caller's transaction:
//  - INSERT into callback_inbox (provider, event_id); a conflict → duplicate, nothing written
//    (payment_id: the payment the first delivery named, if any).
//  - payment = (provider, client_key); none → unknown_reference: a callback_mismatch case
//    with no payment (provider and reference kept on the case), the callback as evidence.
//  - amount/currency present and different from the intent → mismatch: the status is NOT
//    applied; a callback_mismatch case is opened (escalated event; automatic work on a
//    non-terminal payment stops) or, if the payment already has an open case, the callback is
//    added to that case's evidence.
//  - pending → ignored_pending.
//  - succeeded / declined → Trigger::callback_* by CAS on the state alone (callbacks hold no
//    lease): non-terminal → applied (+ payment.succeeded / payment.failed, an open system case
//    resolved with the callback as evidence); terminal and agreeing → confirmed; terminal and
//    contradicting → late_contradiction (case with the callback as evidence, payment.escalated,
//    or evidence on the already open case).
// The inbox row records the result and the payment id. Throws SqliteError on storage errors.
CallbackOutcome record_callback(Db& db, const VendorCallback& cb, UnixMillis now, Random& rng);

// Shared by both drivers (their decision flow is store/callback_flow.h):
// The callback as a case sees it: what the vendor said, and the raw body it said it in.
boost::json::object evidence_of(const VendorCallback& cb, CallbackResult finding);
// The vendor reports an amount or currency other than the intent (only what it carries).
bool differs_from_intent(const VendorCallback& cb, const Payment& p);

}  // namespace payorch::store
