#include "store/postgres/outbox.h"

#include "store/outbox_select.h"

namespace payorch::store::pg {
namespace {

// Row `row` of a select_events() result, in its column order.
OutboxEvent read_event(const Result& r, int row) {
  OutboxEvent e;
  int i = 0;
  e.seq = r.integer(row, i++);
  e.event_id = r.text(row, i++);
  e.tenant_id = r.text(row, i++);
  e.payment_id = r.text(row, i++);
  e.type = r.text(row, i++);
  e.payload = r.text(row, i++);
  e.created_at = r.integer(row, i++);
  e.delivered_at = r.opt_integer(row, i++);
  e.attempts = r.integer(row, i++);
  e.next_attempt_at = r.opt_integer(row, i++);
  e.last_error = r.opt_text(row, i++);
  return e;
}

std::vector<OutboxEvent> read_events(const Result& r) {
  std::vector<OutboxEvent> out;
  for (int row = 0; row < r.rows(); ++row) out.push_back(read_event(r, row));
  return out;
}

}  // namespace

EventPage list_events(Connection& conn, const std::string& tenant_id, std::int64_t after, int limit) {
  EventPage page;
  page.events = read_events(conn.exec(
      select_events("WHERE o.tenant_id = $1 AND o.seq > $2 ORDER BY o.seq LIMIT $3"),
      {tenant_id, after, limit}));
  if (!page.events.empty()) page.next_cursor = page.events.back().seq;
  return page;
}

std::optional<OutboxEvent> find_event(Connection& conn, const std::string& event_id) {
  const Result r = conn.exec(select_events("WHERE o.event_id = $1"), {event_id});
  if (r.rows() == 0) return std::nullopt;
  return read_event(r, 0);
}

std::vector<OutboxEvent> due_deliveries(Connection& conn, const std::vector<std::string>& tenants,
                                        UnixMillis now, int limit,
                                        const std::vector<std::string>& exclude) {
  if (tenants.empty() || limit <= 0) return {};
  // As on SQLite: candidates from outbox_due (tenant_id, next_attempt_at; undelivered only),
  // each NOT EXISTS walking its own payment's events through outbox_by_payment.
  return read_events(conn.exec(
      select_events(
          "WHERE o.delivered_at IS NULL AND o.next_attempt_at <= $1 AND o.tenant_id = ANY($3::text[])"
          " AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.payment_id = o.payment_id"
          "                 AND e.seq < o.seq AND e.delivered_at IS NULL)"
          " AND NOT EXISTS (SELECT 1 FROM outbox x WHERE x.payment_id = o.payment_id"
          "                 AND x.seq <= o.seq AND x.event_id = ANY($4::text[]))"
          " ORDER BY o.seq LIMIT $2"),
      {now, limit, text_array(tenants), text_array(exclude)}));
}

bool mark_delivered(Connection& conn, const std::string& event_id, UnixMillis now) {
  return conn.exec(
             "UPDATE outbox SET delivered_at = $1, attempts = attempts + 1, last_error = NULL"
             " WHERE event_id = $2 AND delivered_at IS NULL",
             {now, event_id})
             .affected() == 1;
}

bool mark_delivery_failed(Connection& conn, const std::string& event_id, const std::string& error,
                          UnixMillis next_attempt_at) {
  return conn.exec(
             "UPDATE outbox SET attempts = attempts + 1, last_error = $1, next_attempt_at = $2"
             " WHERE event_id = $3 AND delivered_at IS NULL",
             {error, next_attempt_at, event_id})
             .affected() == 1;
}

OutboxBacklog outbox_backlog(Connection& conn, const std::vector<std::string>& tenants) {
  OutboxBacklog b;
  if (tenants.empty()) return b;
  const Result r = conn.exec(
      "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE delivered_at IS NULL"
      " AND tenant_id = ANY($1::text[])",
      {text_array(tenants)});
  b.pending = r.integer(0, 0);
  b.oldest_pending_at = r.opt_integer(0, 1);
  return b;
}

// Both purges go through an index on the time they compare (callback_inbox_by_received,
// outbox_delivered), so a batch costs its own rows, not a scan of the table.
int purge_callback_inbox(Connection& conn, UnixMillis before, int limit) {
  return static_cast<int>(
      conn.exec(
              "DELETE FROM callback_inbox WHERE (provider, event_id) IN"
              " (SELECT provider, event_id FROM callback_inbox WHERE received_at < $1 LIMIT $2)",
              {before, limit})
          .affected());
}

int purge_delivered_events(Connection& conn, UnixMillis before, int limit) {
  return static_cast<int>(
      conn.exec(
              "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox"
              " WHERE delivered_at IS NOT NULL AND delivered_at < $1 LIMIT $2)",
              {before, limit})
          .affected());
}

}  // namespace payorch::store::pg
