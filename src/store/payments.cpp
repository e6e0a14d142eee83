#include "store/payments.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <memory>
#include <tuple>
#include <mutex>
#include <vector>

#include "core/ids.h"
#include "core/view.h"
#include "util/log.h"

namespace payorch::store {
namespace {

std::mutex observer_mu;
std::shared_ptr<const TransitionObserver> transition_observer;

void notify_transition(PaymentState from, PaymentState to) {
  std::shared_ptr<const TransitionObserver> observer;
  {
    std::lock_guard lock(observer_mu);
    observer = transition_observer;
  }
  if (observer && *observer) (*observer)(from, to);
}

// The column list every payment SELECT uses, in the order read_payment() expects; `c` is the
// latest reconciliation case of the payment (LEFT JOIN).
constexpr std::string_view payment_columns =
    "p.id, p.tenant_id, p.operation_type, p.operation_id, p.provider, p.client_key, "
    "p.request_digest, p.amount_minor, p.currency, p.payee, p.source, p.description, p.metadata, "
    "p.state, p.next_action, p.next_attempt_at, p.fence, p.lease_owner, p.lease_expires_at, "
    "p.attempt_count, p.first_submit_at, p.last_submit_ended_at, p.vendor_reference, "
    "p.failure_code, p.failure_message, p.created_at, p.updated_at, p.last_submit_started_at, "
    "p.budget_started_at, p.budget_attempts_base, c.id, c.reason, c.status ";

constexpr std::string_view payment_from =
    "FROM payments p LEFT JOIN reconciliation_cases c ON c.id = ("
    " SELECT id FROM reconciliation_cases WHERE payment_id = p.id"
    " ORDER BY opened_at DESC, id DESC LIMIT 1) ";

std::string select_payments(std::string_view where) {
  std::string sql = "SELECT ";
  sql += payment_columns;
  sql += payment_from;
  sql += where;
  return sql;
}

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

Payment read_payment(const Stmt& st) {
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
    CaseSummary c;
    c.case_id = st.col_text(i++);
    c.reason = st.col_text(i++);
    c.status = st.col_text(i++);
    p.reconciliation = std::move(c);
  }
  return p;
}

std::optional<Payment> first(Stmt& st) {
  if (!st.step()) return std::nullopt;
  return read_payment(st);
}

}  // namespace

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

PaymentPage list_payments(Db& db, const std::string& tenant_id, std::optional<PaymentState> state,
                          int limit, const std::optional<std::string>& cursor) {
  // Ask for one more than the page so next_cursor is null exactly when nothing follows.
  auto st = db.prepare(select_payments(
      "WHERE p.tenant_id = ?1 AND (?2 IS NULL OR p.state = ?2) AND (?3 IS NULL OR p.id < ?3) "
      "ORDER BY p.id DESC LIMIT ?4"));
  st.bind(1, tenant_id);
  if (state) st.bind(2, to_string(*state)); else st.bind_null(2);
  st.bind(3, cursor);
  st.bind(4, limit + 1);
  PaymentPage page;
  while (st.step()) page.payments.push_back(read_payment(st));
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
      " next_action, next_attempt_at, fence, attempt_count, created_at, updated_at)"
      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  st.bind(1, p.id).bind(2, p.tenant_id).bind(3, p.operation_type).bind(4, p.operation_id);
  st.bind(5, p.provider).bind(6, p.client_key).bind(7, p.request_digest);
  st.bind(8, p.amount_minor).bind(9, p.currency).bind(10, p.payee).bind(11, p.source);
  st.bind(12, p.description).bind(13, serialize_metadata(p.metadata));
  st.bind(14, to_string(p.state)).bind(15, to_string(p.next_action)).bind(16, p.next_attempt_at);
  st.bind(17, p.fence).bind(18, p.attempt_count).bind(19, p.created_at).bind(20, p.updated_at);
  st.run();
}

std::string insert_outbox_event(Db& db, EventType type, const Payment& p, UnixMillis now,
                                Random& rng) {
  std::string event_id = new_event_id(now, rng);
  auto body = event_body(event_id, type, now, p);
  db.prepare(
        "INSERT INTO outbox (event_id, tenant_id, payment_id, type, payload, created_at,"
        " next_attempt_at) VALUES (?,?,?,?,?,?,?)")
      .bind(1, event_id)
      .bind(2, p.tenant_id)
      .bind(3, p.id)
      .bind(4, to_string(type))
      .bind(5, boost::json::serialize(body))
      .bind(6, now)
      .bind(7, now)
      .run();
  return event_id;
}

std::int64_t count_payments(Db& db, std::optional<PaymentState> state) {
  auto st = db.prepare("SELECT COUNT(*) FROM payments WHERE ?1 IS NULL OR state = ?1");
  if (state) st.bind(1, to_string(*state)); else st.bind_null(1);
  st.step();
  return st.col_int(0);
}

std::optional<Lease> claim_lease(Db& db, const std::string& payment_id, const std::string& owner,
                                 UnixMillis now, Millis lease) {
  // The fence grows with every claim, so a worker that lost its lease (paused, partitioned)
  // can never write again: its fence no longer matches (invariant 5). next_attempt_at becomes
  // the lease's expiry: a leased payment is not due work until its lease lapses, so claims never
  // walk over it; every decision that follows sets its own next_attempt_at.
  auto st = db.prepare(
      "UPDATE payments SET lease_owner = ?1, lease_expires_at = ?2, next_attempt_at = ?2,"
      " fence = fence + 1"
      " WHERE id = ?3 AND state IN ('PROCESSING','UNKNOWN') AND next_action <> 'none'"
      "   AND next_attempt_at <= ?4 AND (lease_owner IS NULL OR lease_expires_at <= ?4)"
      " RETURNING state, fence");
  UnixMillis expires = now + lease.count();
  st.bind(1, owner).bind(2, expires).bind(3, payment_id).bind(4, now);
  if (!st.step()) return std::nullopt;
  Lease l{payment_id, parse_payment_state(st.col_text(0)).value_or(PaymentState::processing),
          st.col_int(1), owner, expires};
  st.run();
  return l;
}

std::vector<Lease> claim_due(Db& db, const std::string& owner, UnixMillis now, Millis lease,
                             const std::vector<ClaimQuota>& quotas, int max) {
  // The head of each provider's due work (index payments_due, schema 005), then the oldest due
  // across them: a round costs the rows it could claim, never the payments waiting behind them.
  struct Due {
    UnixMillis at;
    std::string id;
  };
  std::vector<Due> due;
  for (const auto& q : quotas) {
    const int n = std::min(q.max, max);
    if (n <= 0) continue;
    auto st = db.prepare(
        "SELECT next_attempt_at, id FROM payments WHERE provider = ?1"
        " AND state IN ('PROCESSING','UNKNOWN') AND next_action <> 'none' AND next_attempt_at <= ?2"
        " ORDER BY next_attempt_at, id LIMIT ?3");
    st.bind(1, q.provider).bind(2, now).bind(3, n);
    while (st.step()) due.push_back({st.col_int(0), st.col_text(1)});
  }
  std::sort(due.begin(), due.end(), [](const Due& a, const Due& b) { return std::tie(a.at, a.id) < std::tie(b.at, b.id); });
  if (due.size() > static_cast<std::size_t>(std::max(max, 0))) due.resize(static_cast<std::size_t>(std::max(max, 0)));
  std::vector<Lease> leases;
  for (const auto& d : due)
    if (auto l = claim_lease(db, d.id, owner, now, lease)) leases.push_back(std::move(*l));
  return leases;
}

void set_transition_observer(TransitionObserver observer) {
  auto shared = std::make_shared<const TransitionObserver>(std::move(observer));
  std::lock_guard lock(observer_mu);
  transition_observer = std::move(shared);
}

void count_transitions_in(Metrics& metrics) {
  constexpr const char* name = "payorch_transitions_total";
  metrics.declare_counter(name,
                          "Payment state changes, by from and to state, counted once committed (each "
                          "wrote one outbox event)");
  set_transition_observer([&metrics](PaymentState from, PaymentState to) {
    metrics.inc(name, {{"from", std::string(to_string(from))}, {"to", std::string(to_string(to))}});
  });
}

std::string_view to_string(CasResult r) {
  switch (r) {
    case CasResult::applied: return "applied";
    case CasResult::already_in_state: return "already_in_state";
    case CasResult::stale_fence: return "stale_fence";
    case CasResult::illegal: return "illegal";
    case CasResult::not_found: return "not_found";
  }
  return "?";
}

CasResult apply_transition(Db& db, const std::string& payment_id, std::optional<std::int64_t> fence,
                           const Transition& t, const TransitionUpdate& u, UnixMillis now,
                           Random& rng) {
  if (!t.noop()) {
    auto st = db.prepare(
        "UPDATE payments SET state = ?1, next_action = ?2, next_attempt_at = ?3,"
        " lease_owner = CASE WHEN ?4 THEN NULL ELSE lease_owner END,"
        " lease_expires_at = CASE WHEN ?4 THEN NULL ELSE lease_expires_at END,"
        " vendor_reference = COALESCE(?5, vendor_reference),"
        " failure_code = COALESCE(?6, failure_code), failure_message = COALESCE(?7, failure_message),"
        " updated_at = ?8, last_submit_ended_at = COALESCE(?12, last_submit_ended_at),"
        // A writer without a lease (callback, operator) fences out any worker whose call is
        // still in flight: that worker's later write is stale, never an overwrite.
        " fence = CASE WHEN ?11 IS NULL THEN fence + 1 ELSE fence END"
        " WHERE id = ?9 AND state = ?10 AND (?11 IS NULL OR fence = ?11)");
    st.bind(1, to_string(t.to)).bind(2, to_string(t.next)).bind(3, u.next_attempt_at);
    st.bind(4, u.release_lease ? 1 : 0).bind(5, u.vendor_reference).bind(6, u.failure_code);
    st.bind(7, u.failure_message).bind(8, now).bind(9, payment_id).bind(10, to_string(t.from));
    st.bind(11, fence).bind(12, u.last_submit_ended_at);
    st.run();
    if (db.changes() == 1) {
      bool case_opened = false;
      if (t.open_case) {
        // At most one open case per payment (unique index): an escalation while a case is
        // already open adds nothing.
        db.prepare(
              "INSERT OR IGNORE INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
              " VALUES (?, ?, ?, 'open', ?)")
            .bind(1, new_case_id(now, rng))
            .bind(2, payment_id)
            .bind(3, to_string(*t.open_case))
            .bind(4, now)
            .run();
        case_opened = db.changes() == 1;
      }
      if (t.resolves_system_case) {
        db.prepare(
              "UPDATE reconciliation_cases SET status = 'resolved', resolved_at = ?1,"
              " resolved_by = 'system', outcome = ?2,"
              " note = 'resolved by a verified vendor callback'"
              " WHERE payment_id = ?3 AND status = 'open' AND reason IN"
              " ('retry_budget_exhausted','unrecoverable_contract','key_retention_expiring')")
            .bind(1, now)
            .bind(2, t.to == PaymentState::succeeded ? "succeeded" : "failed_final")
            .bind(3, payment_id)
            .run();
      }
      // Every case opening is announced by payment.escalated (docs/contract.md §6), after the event of the
      // state the payment arrived in, if that is another one (submit_key_mismatch: UNKNOWN).
      const bool escalated_too = case_opened && t.event != EventType::escalated;
      std::optional<Payment> p;
      if (t.event || escalated_too) p = find_payment_by_id(db, payment_id);
      if (t.event) insert_outbox_event(db, *t.event, *p, now, rng);
      if (escalated_too) insert_outbox_event(db, EventType::escalated, *p, now, rng);
      if (t.changes_state() || t.open_case) {
        // Logged and counted once durable: a rolled-back decision never happened.
        db.after_commit([t, escalated_too, id = payment_id, key = p ? p->client_key : std::string(),
                         new_fence = p ? p->fence : std::int64_t{0}] {
          if (t.changes_state()) notify_transition(t.from, t.to);
          std::vector<log::Field> fields{{"payment_id", id},
                                         {"client_key", key},
                                         {"fence", new_fence},
                                         {"from", to_string(t.from)},
                                         {"to", to_string(t.to)}};
          if (t.event) fields.emplace_back("outbox_event", to_string(*t.event));
          if (escalated_too) fields.emplace_back("also_event", to_string(EventType::escalated));
          if (t.open_case) fields.emplace_back("case_reason", to_string(*t.open_case));
          log::write(log::Level::info, t.changes_state() ? "payment.state_changed" : "payment.escalated", "",
                     fields);
        });
      }
      return CasResult::applied;
    }
  }
  // 0 rows: classify, never swallow.
  auto st = db.prepare("SELECT state, fence FROM payments WHERE id = ?");
  st.bind(1, payment_id);
  if (!st.step()) return CasResult::not_found;
  auto current = parse_payment_state(st.col_text(0));
  if (fence && st.col_int(1) != *fence) return CasResult::stale_fence;
  if (current == t.to) return CasResult::already_in_state;
  return CasResult::illegal;
}

}  // namespace payorch::store
