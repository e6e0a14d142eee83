#pragma once
// The outbox (docs/contract.md §6): events written in the transaction of the state change they announce,
// read back as each tenant's ordered feed and pushed to the tenant's webhook. Like the rest of
// store/, every function runs on the connection it is given, inside the caller's transaction,
// and throws SqliteError on storage failures.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "store/sqlite.h"

namespace payorch::store {

struct OutboxEvent {
  std::int64_t seq = 0;              // feed order; the events cursor
  std::string event_id;              // evt_<ULID>
  std::string tenant_id;
  std::string payment_id;
  std::string type;                  // "payment.succeeded", ...
  std::string payload;               // the event body exactly as sent (serialized JSON)
  UnixMillis created_at = 0;
  std::optional<UnixMillis> delivered_at;  // a 2xx from the tenant's webhook
  std::int64_t attempts = 0;               // push attempts made
  std::optional<UnixMillis> next_attempt_at;
  std::optional<std::string> last_error;   // of the last failed push attempt
};

struct EventPage {
  std::vector<OutboxEvent> events;
  // The seq of the last event returned; nullopt when the page is empty. A consumer keeps the
  // last non-null cursor and asks again with after=<cursor> later.
  std::optional<std::int64_t> next_cursor;
};

// A tenant's events with seq > after, oldest first, at most `limit`.
EventPage list_events(Db& db, const std::string& tenant_id, std::int64_t after, int limit);

// One event by id, for any tenant (nullopt when missing or purged).
std::optional<OutboxEvent> find_event(Db& db, const std::string& event_id);

// The events of one payment, oldest first.
std::vector<OutboxEvent> events_of_payment(Db& db, const std::string& payment_id);

// Events to push now, oldest first, at most `limit`: undelivered, of one of `tenants` (those
// with a webhook), next_attempt_at <= now, and each the oldest undelivered event of its
// payment — a payment's events are delivered in order, so a later one waits for the earlier.
// Event ids in `exclude` (pushes in flight) are skipped, and so is every later event of their
// payments.
std::vector<OutboxEvent> due_deliveries(Db& db, const std::vector<std::string>& tenants,
                                        UnixMillis now, int limit,
                                        const std::vector<std::string>& exclude = {});

// The earliest next_attempt_at of an undelivered event of `tenants` (to sleep until it).
std::optional<UnixMillis> next_delivery_at(Db& db, const std::vector<std::string>& tenants);

// The receiver answered 2xx: delivered_at = now, attempts + 1, last_error cleared. Returns false
// when the event is gone or was already delivered (then nothing changes).
bool mark_delivered(Db& db, const std::string& event_id, UnixMillis now);

// A failed push: attempts + 1, last_error, next_attempt_at. Returns false when the event is
// gone or already delivered.
bool mark_delivery_failed(Db& db, const std::string& event_id, const std::string& error,
                          UnixMillis next_attempt_at);

struct OutboxBacklog {
  std::int64_t pending = 0;                 // undelivered events of `tenants`
  std::optional<UnixMillis> oldest_pending_at;
};
OutboxBacklog outbox_backlog(Db& db, const std::vector<std::string>& tenants);

// ---- Retention (docs/contract.md §7 retention{callback_inbox, delivered_events}) ----
// Deletes at most `limit` rows per call (callers loop, so one purge never holds the writer
// for long). Payments, cases, conflicts and undelivered events are never touched.

// Inbox rows received before `before`.
int purge_callback_inbox(Db& db, UnixMillis before, int limit);
// Events delivered before `before`.
int purge_delivered_events(Db& db, UnixMillis before, int limit);

}  // namespace payorch::store
