#include "store/postgres/outbox.h"

namespace payorch::store::pg {
namespace {

// The columns of an outbox row (alias o) that read_event reads, in its order: store/outbox.cpp's,
// with the feed position in place of seq (the header says why).
constexpr std::string_view event_columns =
    "o.feed_pos, o.event_id, o.tenant_id, o.payment_id, o.type, o.payload, o.created_at,"
    " o.delivered_at, o.attempts, o.next_attempt_at, o.last_error";

std::string select_events(std::string_view from, std::string_view rest) {
  std::string sql = "SELECT ";
  sql += event_columns;
  sql += " FROM ";
  sql += from;
  sql += " o ";
  sql += rest;
  return sql;
}

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

// The events due to push, as on SQLite: candidates from outbox_due (tenant_id, next_attempt_at;
// undelivered only), each the oldest undelivered event of its payment by seq (the order in
// which the payment's transactions wrote them: each holds the payment's row lock when it does),
// none at or after an excluded event of its payment. $1 now, $2 limit, $3 tenants, $4 exclude.
constexpr std::string_view due_where =
    "WHERE o.delivered_at IS NULL AND o.next_attempt_at <= $1 AND o.tenant_id = ANY($3::text[])"
    " AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.payment_id = o.payment_id"
    "                 AND e.seq < o.seq AND e.delivered_at IS NULL)"
    " AND NOT EXISTS (SELECT 1 FROM outbox x WHERE x.payment_id = o.payment_id"
    "                 AND x.seq <= o.seq AND x.event_id = ANY($4::text[]))"
    " ORDER BY o.seq LIMIT $2";

}  // namespace

// Feed position p belongs to transaction p / 2^20 (schema/postgres/002_many_nodes.sql); a
// transaction below the snapshot's xmin has ended, and all the positions of those that have not
// are at or above xmin * 2^20. The events past that bound wait for a later page, which returns
// them in order with whatever the open transactions commit meanwhile. LEAST keeps the product
// in a BIGINT (no event has a transaction id that high).
EventPage list_events(Connection& conn, const std::string& tenant_id, std::int64_t after, int limit) {
  EventPage page;
  page.events = read_events(conn.exec(
      select_events(
          "outbox",
          "WHERE o.tenant_id = $1 AND o.feed_pos > $2 AND o.feed_pos <"
          " LEAST(pg_snapshot_xmin(pg_current_snapshot())::text::bigint, 8796093022207) * 1048576"
          " ORDER BY o.feed_pos LIMIT $3"),
      {tenant_id, after, limit}));
  if (!page.events.empty()) page.next_cursor = page.events.back().seq;
  return page;
}

std::optional<OutboxEvent> find_event(Connection& conn, const std::string& event_id) {
  const Result r = conn.exec(select_events("outbox", "WHERE o.event_id = $1"), {event_id});
  if (r.rows() == 0) return std::nullopt;
  return read_event(r, 0);
}

std::vector<OutboxEvent> due_deliveries(Connection& conn, const std::vector<std::string>& tenants,
                                        UnixMillis now, int limit, Millis claim,
                                        const std::vector<std::string>& exclude) {
  if (tenants.empty() || limit <= 0) return {};
  if (conn.exec("SELECT current_setting('transaction_read_only')").text(0, 0) == "on")
    return read_events(conn.exec(select_events("outbox", due_where),
                                 {now, limit, text_array(tenants), text_array(exclude)}));
  // The claim. SKIP LOCKED passes over events another node is claiming or marking right now;
  // an event whose claim committed after this statement's snapshot is re-checked on its new row
  // (READ COMMITTED) and dropped, its next_attempt_at being in the future. A payment's later
  // events stay out while an earlier one is claimed: it is still undelivered.
  // If we die after COMMIT and before the push, the events come back when the claim lapses.
  return read_events(conn.exec(
      "WITH due AS (SELECT o.seq FROM outbox o " + std::string(due_where) +
          " FOR UPDATE OF o SKIP LOCKED),"
          " claimed AS (UPDATE outbox c SET next_attempt_at = $5 FROM due WHERE c.seq = due.seq"
          " RETURNING c.*) " +
          select_events("claimed", "ORDER BY o.seq"),
      {now, limit, text_array(tenants), text_array(exclude), now + claim.count()}));
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
