#include "store/postgres/callbacks.h"

#include "store/callback_flow.h"
#include "store/postgres/flow_handle.h"

namespace payorch::store::pg {

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

  CallbackOutcome out = decide_callback(w, cb, now, rng);
  w.conn.exec(
      "UPDATE callback_inbox SET result = $1, payment_id = $2 WHERE provider = $3 AND event_id = $4",
      {to_string(out.result), out.payment_id, cb.provider, cb.event_id});
  // Crash timeline: all of this is the caller's one transaction. Dying before its COMMIT leaves
  // no inbox row, so the vendor's retry (never answered 2xx) is applied afresh; after it, the
  // inbox row, the payment, its case and its outbox event are there together.
  return out;
}

}  // namespace payorch::store::pg
