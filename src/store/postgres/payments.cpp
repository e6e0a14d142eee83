#include "store/postgres/payments.h"

#include <boost/json/serialize.hpp>

#include "core/ids.h"
#include "core/view.h"
#include "store/postgres/history.h"

namespace payorch::store::pg {
namespace {

// Row `row` of a select_payments() result, in its column order.
}  // namespace

Payment read_payment_row(const Result& r, int row) {
  Payment p;
  int i = 0;
  p.id = r.text(row, i++);
  p.tenant_id = r.text(row, i++);
  p.operation_type = r.text(row, i++);
  p.operation_id = r.text(row, i++);
  p.provider = r.text(row, i++);
  p.client_key = r.text(row, i++);
  p.request_digest = r.text(row, i++);
  p.amount_minor = r.integer(row, i++);
  p.currency = r.text(row, i++);
  p.payee = r.text(row, i++);
  p.source = r.text(row, i++);
  p.description = r.opt_text(row, i++);
  p.metadata = parse_metadata(r.text(row, i++));
  const std::string state = r.text(row, i++);
  const auto parsed_state = parse_payment_state(state);
  if (!parsed_state)
    throw Error(ErrorKind::other, "", "", "payment " + p.id + ": bad state " + state);
  p.state = *parsed_state;
  p.next_action = parse_next_action(r.text(row, i++)).value_or(NextAction::none);
  p.next_attempt_at = r.integer(row, i++);
  p.fence = r.integer(row, i++);
  p.lease_owner = r.opt_text(row, i++);
  p.lease_expires_at = r.opt_integer(row, i++);
  p.attempt_count = r.integer(row, i++);
  p.first_submit_at = r.opt_integer(row, i++);
  p.last_submit_ended_at = r.opt_integer(row, i++);
  p.vendor_reference = r.opt_text(row, i++);
  p.failure_code = r.opt_text(row, i++);
  p.failure_message = r.opt_text(row, i++);
  p.created_at = r.integer(row, i++);
  p.updated_at = r.integer(row, i++);
  p.last_submit_started_at = r.opt_integer(row, i++);
  p.budget_started_at = r.opt_integer(row, i++);
  p.budget_attempts_base = r.integer(row, i++);
  if (!r.is_null(row, i)) {
    RefundOf of;
    of.id = r.text(row, i++);
    of.operation_id = r.text(row, i++);
    of.client_key = r.text(row, i++);
    of.vendor_reference = r.opt_text(row, i++);
    p.refund_of = std::move(of);
  } else {
    i += 4;
  }
  p.deferred = r.integer(row, i++) != 0;
  p.amount_refunded_minor = r.integer(row, i++);
  p.amount_reserved_minor = r.integer(row, i++);
  p.vendor_closed_at = r.opt_integer(row, i++);
  p.stop_requested_at = r.opt_integer(row, i++);
  p.origin.request_id = r.opt_text(row, i++);
  p.origin.trace_id = r.opt_text(row, i++);
  p.origin.trace_flags = r.opt_text(row, i++);
  if (!r.is_null(row, i)) {
    CaseSummary c;
    c.case_id = r.text(row, i++);
    c.reason = r.text(row, i++);
    c.status = r.text(row, i++);
    p.reconciliation = std::move(c);
  }
  return p;
}

namespace {

std::optional<Payment> first(const Result& r) {
  if (r.rows() == 0) return std::nullopt;
  return read_payment_row(r, 0);
}

}  // namespace

std::optional<Payment> find_payment_by_id(Connection& conn, const std::string& id) {
  return first(conn.exec(select_payments("WHERE p.id = $1"), {id}));
}

std::optional<Payment> find_payment_by_operation(Connection& conn, const std::string& tenant_id,
                                                 const std::string& operation_type,
                                                 const std::string& operation_id) {
  return first(conn.exec(
      select_payments("WHERE p.tenant_id = $1 AND p.operation_type = $2 AND p.operation_id = $3"),
      {tenant_id, operation_type, operation_id}));
}

std::optional<Payment> find_payment_by_client_key(Connection& conn, const std::string& provider,
                                                  const std::string& client_key) {
  return first(conn.exec(select_payments("WHERE p.provider = $1 AND p.client_key = $2"),
                         {provider, client_key}));
}

PaymentPage list_payments(Connection& conn, const std::string& tenant_id,
                          std::optional<PaymentState> state, int limit,
                          const std::optional<std::string>& cursor) {
  // One more than the page, so next_cursor is null exactly when nothing follows.
  std::optional<std::string> state_name;
  if (state) state_name = std::string(to_string(*state));
  const Result r = conn.exec(
      select_payments("WHERE p.tenant_id = $1 AND p.operation_type = 'payment'"
                      " AND ($2::text IS NULL OR p.state = $2)"
                      " AND ($3::text IS NULL OR p.id < $3) ORDER BY p.id DESC LIMIT $4"),
      {tenant_id, state_name, cursor, limit + 1});
  PaymentPage page;
  for (int row = 0; row < r.rows(); ++row) page.payments.push_back(read_payment_row(r, row));
  if (static_cast<int>(page.payments.size()) > limit) {
    page.payments.pop_back();
    page.next_cursor = page.payments.back().id;
  }
  return page;
}

std::string insert_outbox_event(Connection& conn, EventType type, const Payment& p,
                                UnixMillis now, Random& rng, const std::optional<std::string>& request_id) {
  std::string event_id = new_event_id(now, rng);
  // Nothing of its result is read: it goes to the server with the transaction's next statement.
  conn.defer(
      "INSERT INTO outbox (event_id, tenant_id, payment_id, type, payload, created_at,"
      " next_attempt_at, request_id) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
      {event_id, p.tenant_id, p.id, event_type(type, p),
       boost::json::serialize(event_body(event_id, type, now, p)), now, now, request_id});
  return event_id;
}

std::optional<std::string> insert_created(Connection& conn, const Payment& p, UnixMillis now,
                                          Random& rng) {
  std::string event_id = new_event_id(now, rng);
  const HistoryEntry h = created_entry(p, event_id, now);
  // One statement, one round trip: the event and the history entry are inserted only from the
  // row the first INSERT returns, so a row whose keys were taken writes nothing at all.
  const Result r = conn.exec(
      "WITH p AS ("
      " INSERT INTO payments (id, tenant_id, operation_type, operation_id, provider, client_key,"
      " request_digest, amount_minor, currency, payee, source, description, metadata, state,"
      " next_action, next_attempt_at, fence, attempt_count, created_at, updated_at, refund_of,"
      " deferred, request_id, trace_id, trace_flags) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,"
      " $12,$13,$14,$15,$16,$17,$18,$19,$20, $21, $22::boolean, $23, $24, $25) ON CONFLICT DO NOTHING"
      " RETURNING id),"
      " e AS ("
      " INSERT INTO outbox (event_id, tenant_id, payment_id, type, payload, created_at,"
      " next_attempt_at, request_id) SELECT $26, $2, p.id, $27, $28, $29, $29, $23 FROM p"
      " RETURNING event_id),"
      " h AS ("
      " INSERT INTO payment_history (payment_id, at, from_state, to_state, next_action, fence,"
      " cause, event_type, event_id, case_reason, request_id)"
      " SELECT p.id, $30, $31, $32, $33, $34, $35, $36, e.event_id, $37, $38 FROM p, e)"
      " SELECT count(*) FROM p",
      {p.id, p.tenant_id, p.operation_type, p.operation_id, p.provider, p.client_key,
       p.request_digest, p.amount_minor, p.currency, p.payee, p.source, p.description,
       serialize_metadata(p.metadata), to_string(p.state), to_string(p.next_action),
       p.next_attempt_at, p.fence, p.attempt_count, p.created_at, p.updated_at,
       p.refund_of ? std::optional<std::string>(p.refund_of->id) : std::nullopt, p.deferred,
       p.origin.request_id, p.origin.trace_id, p.origin.trace_flags,
       event_id, event_type(EventType::created, p),
       boost::json::serialize(event_body(event_id, EventType::created, now, p)), now,
       h.at, h.from_state, h.to_state, h.next_action, h.fence, h.cause, h.event_type,
       h.case_reason, h.request_id});
  if (r.integer(0, 0) == 0) return std::nullopt;
  return event_id;
}

void insert_idempotency_conflict(Connection& conn, const IdempotencyConflict& c) {
  conn.exec(
      "INSERT INTO idempotency_conflicts (tenant_id, operation_type, operation_id, payment_id,"
      " stored_digest, attempted_digest, attempted_body, created_at)"
      " VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
      {c.tenant_id, c.operation_type, c.operation_id, c.payment_id, c.stored_digest,
       c.attempted_digest, c.attempted_body, c.created_at});
}

IntakeOutcome record_intake(Connection& conn, const IntakeRequest& req, UnixMillis now, Random& rng) {
  // As on SQLite: a collision of the random client_key or id is retried with fresh values; a
  // collision of the business key is the idempotency decision.
  for (int attempt = 0;; ++attempt) {
    Payment p = new_payment(req, now, rng);
    if (insert_created(conn, p, now, rng))
      return IntakeOutcome{IntakeOutcome::Kind::created, std::move(p), req.request_digest};
    auto stored = find_payment_by_operation(conn, req.tenant_id, req.intent.operation_type,
                                            req.intent.operation_id);
    if (!stored) {
      if (attempt < 3) continue;  // an id/client_key collision, not the business key
      throw Error(ErrorKind::unique_violation, "23505", "",
                  "intake: unique violation without a stored payment");
    }
    IntakeOutcome out = judge_stored_intake(req, std::move(*stored));
    // A replay acknowledges a payment that an earlier transaction wrote, perhaps one whose
    // COMMIT was cut off while it waited for a synchronous standby: committed on the primary,
    // not yet on the standby (docs/high-availability.md). A transaction id makes this
    // transaction's own COMMIT wait for the standby too, and so for everything before it.
    if (out.kind == IntakeOutcome::Kind::replayed) conn.exec("SELECT pg_current_xact_id()");
    if (out.kind == IntakeOutcome::Kind::conflict)
      insert_idempotency_conflict(conn, idempotency_conflict(req, out.payment, now));
    return out;
  }
}

}  // namespace payorch::store::pg
