#include "store/outbox.h"

#include "store/outbox_select.h"

namespace payorch::store {
namespace {

constexpr std::string_view event_columns =
    "o.seq, o.event_id, o.tenant_id, o.payment_id, o.type, o.payload, o.created_at,"
    " o.delivered_at, o.attempts, o.next_attempt_at, o.last_error ";

OutboxEvent read_event(const Stmt& st) {
  OutboxEvent e;
  int i = 0;
  e.seq = st.col_int(i++);
  e.event_id = st.col_text(i++);
  e.tenant_id = st.col_text(i++);
  e.payment_id = st.col_text(i++);
  e.type = st.col_text(i++);
  e.payload = st.col_text(i++);
  e.created_at = st.col_int(i++);
  e.delivered_at = st.col_opt_int(i++);
  e.attempts = st.col_int(i++);
  e.next_attempt_at = st.col_opt_int(i++);
  e.last_error = st.col_opt_text(i++);
  return e;
}

// "?N,?N+1,…": one numbered parameter per item, for an IN list starting at parameter `first`.
std::string placeholders(int first, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    out += '?' + std::to_string(first + static_cast<int>(i));
  }
  return out;
}

void bind_list(Stmt& st, int first, const std::vector<std::string>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) st.bind(first + static_cast<int>(i), values[i]);
}

}  // namespace

std::string select_events(std::string_view rest) {
  std::string sql = "SELECT ";
  sql += event_columns;
  sql += "FROM outbox o ";
  sql += rest;
  return sql;
}

EventPage list_events(Db& db, const std::string& tenant_id, std::int64_t after, int limit) {
  auto st = db.prepare(select_events("WHERE o.tenant_id = ? AND o.seq > ? ORDER BY o.seq LIMIT ?"));
  st.bind(1, tenant_id).bind(2, after).bind(3, limit);
  EventPage page;
  while (st.step()) page.events.push_back(read_event(st));
  if (!page.events.empty()) page.next_cursor = page.events.back().seq;
  return page;
}

std::optional<OutboxEvent> find_event(Db& db, const std::string& event_id) {
  auto st = db.prepare(select_events("WHERE o.event_id = ?"));
  st.bind(1, event_id);
  if (!st.step()) return std::nullopt;
  return read_event(st);
}

std::vector<OutboxEvent> events_of_payment(Db& db, const std::string& payment_id) {
  auto st = db.prepare(select_events("WHERE o.payment_id = ? ORDER BY o.seq"));
  st.bind(1, payment_id);
  std::vector<OutboxEvent> out;
  while (st.step()) out.push_back(read_event(st));
  return out;
}

std::vector<OutboxEvent> due_deliveries(Db& db, const std::vector<std::string>& tenants,
                                        UnixMillis now, int limit,
                                        const std::vector<std::string>& exclude) {
  if (tenants.empty() || limit <= 0) return {};
  // Candidates come from outbox_due (tenant_id, next_attempt_at; undelivered only), so a poll
  // reads the due events of these tenants and nothing else; each NOT EXISTS walks the
  // candidate's own payment through outbox_by_payment (payment_id, seq), a handful of rows.
  // Every event is written with next_attempt_at = created_at.
  const int first_tenant = 3;
  const int first_excluded = first_tenant + static_cast<int>(tenants.size());
  std::string where =
      "WHERE o.delivered_at IS NULL AND o.next_attempt_at <= ?1"
      " AND o.tenant_id IN (" + placeholders(first_tenant, tenants.size()) + ")"
      " AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.payment_id = o.payment_id"
      "                 AND e.seq < o.seq AND e.delivered_at IS NULL)";
  if (!exclude.empty())
    where += " AND NOT EXISTS (SELECT 1 FROM outbox x WHERE x.payment_id = o.payment_id"
             " AND x.seq <= o.seq AND x.event_id IN (" +
             placeholders(first_excluded, exclude.size()) + "))";
  auto st = db.prepare(select_events(where + " ORDER BY o.seq LIMIT ?2"));
  st.bind(1, now).bind(2, limit);
  bind_list(st, first_tenant, tenants);
  bind_list(st, first_excluded, exclude);
  std::vector<OutboxEvent> out;
  while (st.step()) out.push_back(read_event(st));
  return out;
}

std::optional<UnixMillis> next_delivery_at(Db& db, const std::vector<std::string>& tenants) {
  if (tenants.empty()) return std::nullopt;
  auto st = db.prepare(
      "SELECT next_attempt_at FROM outbox WHERE delivered_at IS NULL"
      " AND next_attempt_at IS NOT NULL AND tenant_id IN (" + placeholders(1, tenants.size()) +
      ") ORDER BY next_attempt_at LIMIT 1");
  bind_list(st, 1, tenants);
  if (!st.step()) return std::nullopt;
  return st.col_int(0);
}

bool mark_delivered(Db& db, const std::string& event_id, UnixMillis now) {
  db.prepare(
        "UPDATE outbox SET delivered_at = ?1, attempts = attempts + 1, last_error = NULL"
        " WHERE event_id = ?2 AND delivered_at IS NULL")
      .bind(1, now)
      .bind(2, event_id)
      .run();
  return db.changes() == 1;
}

bool mark_delivery_failed(Db& db, const std::string& event_id, const std::string& error,
                          UnixMillis next_attempt_at) {
  db.prepare(
        "UPDATE outbox SET attempts = attempts + 1, last_error = ?1, next_attempt_at = ?2"
        " WHERE event_id = ?3 AND delivered_at IS NULL")
      .bind(1, error)
      .bind(2, next_attempt_at)
      .bind(3, event_id)
      .run();
  return db.changes() == 1;
}

OutboxBacklog outbox_backlog(Db& db, const std::vector<std::string>& tenants) {
  OutboxBacklog b;
  if (tenants.empty()) return b;
  auto st = db.prepare(
      "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE delivered_at IS NULL"
      " AND tenant_id IN (" + placeholders(1, tenants.size()) + ")");
  bind_list(st, 1, tenants);
  st.step();
  b.pending = st.col_int(0);
  b.oldest_pending_at = st.col_opt_int(1);
  return b;
}

// Both purges go through an index on the time they compare (schema 003, 004), so a batch costs
// its own rows, not a scan of the table.
int purge_callback_inbox(Db& db, UnixMillis before, int limit) {
  db.prepare(
        "DELETE FROM callback_inbox WHERE rowid IN"
        " (SELECT rowid FROM callback_inbox WHERE received_at < ?1 LIMIT ?2)")
      .bind(1, before)
      .bind(2, limit)
      .run();
  return db.changes();
}

int purge_delivered_events(Db& db, UnixMillis before, int limit) {
  db.prepare(
        "DELETE FROM outbox WHERE seq IN"
        " (SELECT seq FROM outbox WHERE delivered_at IS NOT NULL AND delivered_at < ?1 LIMIT ?2)")
      .bind(1, before)
      .bind(2, limit)
      .run();
  return db.changes();
}

}  // namespace payorch::store
