#include "store/payments.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <map>

#include "core/ids.h"
#include "core/view.h"

namespace payorch::store {
namespace {

// The column list every payment SELECT uses, in the order read_payment_row() expects; `rp` is the
// payment a refund row refunds, `c` the latest reconciliation case of the row (LEFT JOINs).
constexpr std::string_view payment_columns =
    "p.id, p.tenant_id, p.operation_type, p.operation_id, p.provider, p.client_key, "
    "p.request_digest, p.amount_minor, p.currency, p.payee, p.source, p.description, p.metadata, "
    "p.state, p.next_action, p.next_attempt_at, p.fence, p.lease_owner, p.lease_expires_at, "
    "p.attempt_count, p.first_submit_at, p.last_submit_ended_at, p.vendor_reference, "
    "p.failure_code, p.failure_message, p.created_at, p.updated_at, p.last_submit_started_at, "
    "p.budget_started_at, p.budget_attempts_base, p.refund_of, rp.operation_id, rp.client_key, "
    "rp.vendor_reference, CAST(p.deferred AS INTEGER), p.amount_refunded_minor, "
    "p.amount_reserved_minor, p.vendor_closed_at, p.stop_requested_at, p.request_id, p.trace_id, "
    "p.trace_flags, c.id, c.reason, c.status ";

// After FROM and the relation of the payment rows (the table, or a CTE of rows just written).
constexpr std::string_view payment_joins =
    " p LEFT JOIN payments rp ON rp.id = p.refund_of"
    " LEFT JOIN reconciliation_cases c ON c.id = ("
    " SELECT id FROM reconciliation_cases WHERE payment_id = p.id"
    " ORDER BY opened_at DESC, id DESC LIMIT 1) ";

}  // namespace

Payment read_payment_row(const Stmt& st) {
  Payment p;
  int i = 0;
  p.id = st.col_text(i++);
  p.tenant_id = st.col_text(i++);
  p.operation_type = st.col_text(i++);
  p.operation_id = st.col_text(i++);
  p.provider = st.col_text(i++);
  p.client_key = st.col_text(i++);
  p.request_digest = st.col_text(i++);
  p.amount_minor = st.col_int(i++);
  p.currency = st.col_text(i++);
  p.payee = st.col_text(i++);
  p.source = st.col_text(i++);
  p.description = st.col_opt_text(i++);
  p.metadata = parse_metadata(st.col_text(i++));
  std::string state = st.col_text(i++);
  auto parsed_state = parse_payment_state(state);
  if (!parsed_state) throw SqliteError(SQLITE_CORRUPT, "payment " + p.id + ": bad state " + state);
  p.state = *parsed_state;
  p.next_action = parse_next_action(st.col_text(i++)).value_or(NextAction::none);
  p.next_attempt_at = st.col_int(i++);
  p.fence = st.col_int(i++);
  p.lease_owner = st.col_opt_text(i++);
  p.lease_expires_at = st.col_opt_int(i++);
  p.attempt_count = st.col_int(i++);
  p.first_submit_at = st.col_opt_int(i++);
  p.last_submit_ended_at = st.col_opt_int(i++);
  p.vendor_reference = st.col_opt_text(i++);
  p.failure_code = st.col_opt_text(i++);
  p.failure_message = st.col_opt_text(i++);
  p.created_at = st.col_int(i++);
  p.updated_at = st.col_int(i++);
  p.last_submit_started_at = st.col_opt_int(i++);
  p.budget_started_at = st.col_opt_int(i++);
  p.budget_attempts_base = st.col_int(i++);
  if (!st.col_null(i)) {
    RefundOf of;
    of.id = st.col_text(i++);
    of.operation_id = st.col_text(i++);
    of.client_key = st.col_text(i++);
    of.vendor_reference = st.col_opt_text(i++);
    p.refund_of = std::move(of);
  } else {
    i += 4;
  }
  p.deferred = st.col_int(i++) != 0;
  p.amount_refunded_minor = st.col_int(i++);
  p.amount_reserved_minor = st.col_int(i++);
  p.vendor_closed_at = st.col_opt_int(i++);
  p.stop_requested_at = st.col_opt_int(i++);
  p.origin.request_id = st.col_opt_text(i++);
  p.origin.trace_id = st.col_opt_text(i++);
  p.origin.trace_flags = st.col_opt_text(i++);
  if (!st.col_null(i)) {
    CaseSummary c;
    c.case_id = st.col_text(i++);
    c.reason = st.col_text(i++);
    c.status = st.col_text(i++);
    p.reconciliation = std::move(c);
  }
  return p;
}

namespace {

std::optional<Payment> first(Stmt& st) {
  if (!st.step()) return std::nullopt;
  return read_payment_row(st);
}

}  // namespace

std::string select_payments_of(std::string_view relation, std::string_view where) {
  std::string sql = "SELECT ";
  sql += payment_columns;
  sql += "FROM ";
  sql += relation;
  sql += payment_joins;
  sql += where;
  return sql;
}

std::string select_payments(std::string_view where) { return select_payments_of("payments", where); }

std::map<std::string, std::string> parse_metadata(const std::string& text) {
  std::map<std::string, std::string> out;
  boost::json::value v = boost::json::parse(text);
  for (const auto& kv : v.as_object()) out[std::string(kv.key())] = std::string(kv.value().as_string());
  return out;
}

std::string serialize_metadata(const std::map<std::string, std::string>& md) {
  boost::json::object o;
  for (const auto& [k, v] : md) o[k] = v;
  return boost::json::serialize(o);
}

std::optional<Payment> find_payment_by_id(Db& db, const std::string& id) {
  auto st = db.prepare(select_payments("WHERE p.id = ?"));
  st.bind(1, id);
  return first(st);
}

std::optional<Payment> find_payment_by_operation(Db& db, const std::string& tenant_id,
                                                 const std::string& operation_type,
                                                 const std::string& operation_id) {
  auto st = db.prepare(select_payments(
      "WHERE p.tenant_id = ? AND p.operation_type = ? AND p.operation_id = ?"));
  st.bind(1, tenant_id).bind(2, operation_type).bind(3, operation_id);
  return first(st);
}

std::optional<Payment> find_payment_by_client_key(Db& db, const std::string& provider,
                                                  const std::string& client_key) {
  auto st = db.prepare("SELECT id FROM payments WHERE provider = ? AND client_key = ?");
  st.bind(1, provider).bind(2, client_key);
  if (!st.step()) return std::nullopt;
  const std::string id = st.col_text(0);
  st.reset();
  return find_payment_by_id(db, id);
}

std::optional<Payment> lock_payment_by_client_key(Db& db, const std::string& provider,
                                                  const std::string& client_key) {
  return find_payment_by_client_key(db, provider, client_key);
}

PaymentPage list_payments(Db& db, const std::string& tenant_id, std::optional<PaymentState> state,
                          int limit, const std::optional<std::string>& cursor) {
  // Ask for one more than the page so next_cursor is null exactly when nothing follows.
  auto st = db.prepare(select_payments(
      "WHERE p.tenant_id = ?1 AND p.operation_type = 'payment' AND (?2 IS NULL OR p.state = ?2)"
      " AND (?3 IS NULL OR p.id < ?3) "
      "ORDER BY p.id DESC LIMIT ?4"));
  st.bind(1, tenant_id);
  if (state) st.bind(2, to_string(*state)); else st.bind_null(2);
  st.bind(3, cursor);
  st.bind(4, limit + 1);
  PaymentPage page;
  while (st.step()) page.payments.push_back(read_payment_row(st));
  if (static_cast<int>(page.payments.size()) > limit) {
    page.payments.pop_back();
    page.next_cursor = page.payments.back().id;
  }
  return page;
}

void insert_payment(Db& db, const Payment& p) {
  auto st = db.prepare(
      "INSERT INTO payments (id, tenant_id, operation_type, operation_id, provider, client_key,"
      " request_digest, amount_minor, currency, payee, source, description, metadata, state,"
      " next_action, next_attempt_at, fence, attempt_count, created_at, updated_at, refund_of,"
      " deferred, request_id, trace_id, trace_flags)"
      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, p.id).bind(2, p.tenant_id).bind(3, p.operation_type).bind(4, p.operation_id);
  st.bind(5, p.provider).bind(6, p.client_key).bind(7, p.request_digest);
  st.bind(8, p.amount_minor).bind(9, p.currency).bind(10, p.payee).bind(11, p.source);
  st.bind(12, p.description).bind(13, serialize_metadata(p.metadata));
  st.bind(14, to_string(p.state)).bind(15, to_string(p.next_action)).bind(16, p.next_attempt_at);
  st.bind(17, p.fence).bind(18, p.attempt_count).bind(19, p.created_at).bind(20, p.updated_at);
  if (p.refund_of) st.bind(21, p.refund_of->id); else st.bind_null(21);
  st.bind(22, p.deferred ? 1 : 0);
  st.bind(23, p.origin.request_id).bind(24, p.origin.trace_id).bind(25, p.origin.trace_flags);
  st.run();
}

std::string insert_outbox_event(Db& db, EventType type, const Payment& p, UnixMillis now,
                                Random& rng, const std::optional<std::string>& request_id) {
  return insert_outbox_event_as(db, new_event_id(now, rng), type, p, now, request_id);
}

std::string insert_outbox_event_as(Db& db, std::string event_id, EventType type, const Payment& p,
                                   UnixMillis now, const std::optional<std::string>& request_id) {
  auto body = event_body(event_id, type, now, p);
  db.prepare(
        "INSERT INTO outbox (event_id, tenant_id, payment_id, type, payload, created_at,"
        " next_attempt_at, request_id) VALUES (?,?,?,?,?,?,?,?)")
      .bind(1, event_id)
      .bind(2, p.tenant_id)
      .bind(3, p.id)
      .bind(4, event_type(type, p))
      .bind(5, boost::json::serialize(body))
      .bind(6, now)
      .bind(7, now)
      .bind(8, request_id)
      .run();
  return event_id;
}

std::int64_t count_payments(Db& db, std::optional<PaymentState> state) {
  auto st = db.prepare("SELECT COUNT(*) FROM payments WHERE operation_type = 'payment' AND (?1 IS NULL OR state = ?1)");
  if (state) st.bind(1, to_string(*state)); else st.bind_null(1);
  st.step();
  return st.col_int(0);
}

}  // namespace payorch::store
