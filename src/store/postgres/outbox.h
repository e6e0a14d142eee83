#pragma once
// The outbox and retention on PostgreSQL: the same contracts as store/outbox.h, on a
// pg::Connection inside the caller's transaction. They throw pg::Error. Two differ, for several
// nodes on one database:
//
// - The feed (list_events) is in feed position order, not seq order: OutboxEvent::seq and the
//   cursor are the event's feed_pos (schema/postgres/002_many_nodes.sql), and only events whose
//   writing transaction is older than every transaction still open are returned. An event that
//   commits later therefore always sorts after every event a reader was already given, and a
//   reader paging with the cursor never skips one. The cost: an open writing transaction
//   anywhere on the server holds back the events written after it started, until it ends.
// - due_deliveries, in a read-write transaction, claims what it returns: it moves each event's
//   next_attempt_at to now + claim in the statement that selects it, skipping rows another
//   transaction has locked, so another node's selection passes over an event while it is being
//   pushed (a failed push's mark_delivery_failed sets the real retry time; a push that never
//   reports back is offered again once the claim lapses). In a read-only transaction nothing
//   can be written: it selects as on SQLite, without claiming (claimed events are not due).
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "store/outbox.h"
#include "store/postgres/connection.h"

namespace payorch::store::pg {

EventPage list_events(Connection& conn, const std::string& tenant_id, std::int64_t after, int limit);
std::optional<OutboxEvent> find_event(Connection& conn, const std::string& event_id);
std::vector<OutboxEvent> due_deliveries(Connection& conn, const std::vector<std::string>& tenants,
                                        UnixMillis now, int limit, Millis claim,
                                        const std::vector<std::string>& exclude);
bool mark_delivered(Connection& conn, const std::string& event_id, UnixMillis now);
bool mark_delivery_failed(Connection& conn, const std::string& event_id, const std::string& error,
                          UnixMillis next_attempt_at);
OutboxBacklog outbox_backlog(Connection& conn, const std::vector<std::string>& tenants);
int purge_callback_inbox(Connection& conn, UnixMillis before, int limit);
int purge_delivered_events(Connection& conn, UnixMillis before, int limit);

}  // namespace payorch::store::pg
