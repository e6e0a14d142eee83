#pragma once
// The outbox and retention on PostgreSQL: the same contracts as store/outbox.h, on a
// pg::Connection inside the caller's transaction. They throw pg::Error.
//
// Not yet for several nodes: due_deliveries takes no row locks, so two nodes polling one
// database could push the same event at once (the tenant dedupes by event id, but the order
// per payment is then only per node). Claiming pushes is part of the claims work (issue 14).
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
                                        UnixMillis now, int limit,
                                        const std::vector<std::string>& exclude);
bool mark_delivered(Connection& conn, const std::string& event_id, UnixMillis now);
bool mark_delivery_failed(Connection& conn, const std::string& event_id, const std::string& error,
                          UnixMillis next_attempt_at);
OutboxBacklog outbox_backlog(Connection& conn, const std::vector<std::string>& tenants);
int purge_callback_inbox(Connection& conn, UnixMillis before, int limit);
int purge_delivered_events(Connection& conn, UnixMillis before, int limit);

}  // namespace payorch::store::pg
