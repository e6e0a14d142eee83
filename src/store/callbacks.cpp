#include "store/callbacks.h"

#include <boost/json/object.hpp>
#include <stdexcept>

#include "core/enum_names.h"
#include "core/view.h"
#include "store/callback_flow.h"
#include "store/payments.h"

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

  CallbackOutcome out = decide_callback(db, cb, now, rng);
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
