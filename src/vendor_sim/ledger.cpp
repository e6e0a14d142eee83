#include "vendor_sim/ledger.h"

#include <boost/json/object.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "core/ids.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

constexpr int schema_version = 2;

constexpr const char* schema_sql = R"sql(
CREATE TABLE charges (
  id              TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL,
  reference       TEXT NOT NULL,
  amount_minor    INTEGER NOT NULL,
  currency        TEXT NOT NULL,
  payee           TEXT NOT NULL,
  source          TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('succeeded', 'declined', 'pending')),
  decline_code    TEXT,
  request_hash    TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  key_expires_at  INTEGER NOT NULL,
  key_forgotten   INTEGER NOT NULL DEFAULT 0,
  settles_at      INTEGER
);
CREATE UNIQUE INDEX charges_retained_key ON charges(idempotency_key) WHERE key_forgotten = 0;
CREATE INDEX charges_reference ON charges(reference);
CREATE INDEX charges_settling ON charges(settles_at) WHERE status = 'pending';
CREATE TABLE callbacks (
  event_id        TEXT PRIMARY KEY,
  charge_id       TEXT NOT NULL REFERENCES charges(id),
  type            TEXT NOT NULL,
  body            TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  attempts        INTEGER NOT NULL DEFAULT 0,
  copies_left     INTEGER NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'expired')),
  last_error      TEXT
);
CREATE INDEX callbacks_due ON callbacks(next_attempt_at) WHERE state = 'queued';
PRAGMA user_version = 1;
)sql";

// Version 2: refunds, and the refund a callback announces.
constexpr const char* refunds_sql = R"sql(
CREATE TABLE refunds (
  id              TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL,
  reference       TEXT NOT NULL,
  charge_id       TEXT NOT NULL REFERENCES charges(id),
  amount_minor    INTEGER NOT NULL,
  currency        TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('succeeded', 'declined', 'pending')),
  decline_code    TEXT,
  request_hash    TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  key_expires_at  INTEGER NOT NULL,
  key_forgotten   INTEGER NOT NULL DEFAULT 0,
  settles_at      INTEGER
);
CREATE UNIQUE INDEX refunds_retained_key ON refunds(idempotency_key) WHERE key_forgotten = 0;
CREATE INDEX refunds_reference ON refunds(reference);
CREATE INDEX refunds_charge ON refunds(charge_id);
CREATE INDEX refunds_settling ON refunds(settles_at) WHERE status = 'pending';
ALTER TABLE callbacks ADD COLUMN refund_id TEXT REFERENCES refunds(id);
PRAGMA user_version = 2;
)sql";

constexpr const char* charge_columns =
    "SELECT id, reference, amount_minor, currency, payee, source, status, decline_code, "
    "created_at, updated_at, key_expires_at FROM charges ";

Charge read_charge(const Rows& s) {
  Charge c;
  c.id = s.text(0);
  c.params.reference = s.text(1);
  c.params.amount_minor = s.integer(2);
  c.params.currency = s.text(3);
  c.params.payee = s.text(4);
  c.params.source = s.text(5);
  const auto status = parse_charge_status(s.text(6));
  if (!status) throw std::runtime_error("ledger: charge " + c.id + " has an unknown status");
  c.status = *status;
  c.decline_code = s.maybe_text(7);
  c.created_at = s.integer(8);
  c.updated_at = s.integer(9);
  c.key_expires_at = s.integer(10);
  return c;
}

constexpr const char* refund_columns =
    "SELECT id, reference, charge_id, amount_minor, currency, status, decline_code, created_at, "
    "updated_at, key_expires_at FROM refunds ";

Refund read_refund(const Rows& s) {
  Refund r;
  r.id = s.text(0);
  r.params.reference = s.text(1);
  r.params.charge = s.text(2);
  r.params.amount_minor = s.integer(3);
  r.params.currency = s.text(4);
  const auto status = parse_charge_status(s.text(5));
  if (!status) throw std::runtime_error("ledger: refund " + r.id + " has an unknown status");
  r.status = *status;
  r.decline_code = s.maybe_text(6);
  r.created_at = s.integer(7);
  r.updated_at = s.integer(8);
  r.key_expires_at = s.integer(9);
  return r;
}

template <typename T>
T stored(std::optional<T> row, const std::string& id) {
  if (!row) throw std::runtime_error("ledger: " + id + " vanished inside its transaction");
  return std::move(*row);
}

}  // namespace

Ledger::Ledger(const std::string& path, Random& rng) : db_(path), rng_(rng) {
  create_schema();
}

void Ledger::create_schema() {
  LedgerDb::Transaction tx(db_);
  std::int64_t version = 0;
  if (auto row = db_.query("PRAGMA user_version"); row.next()) version = row.integer(0);
  if (version > schema_version)
    throw std::runtime_error("ledger " + db_.path() + " has schema version " +
                             std::to_string(version) + ", newer than this sim's " +
                             std::to_string(schema_version));
  if (version == 0) db_.script(schema_sql);
  if (version < 2) db_.script(refunds_sql);
  tx.commit();
}

// Crash timeline: everything below is one BEGIN IMMEDIATE transaction. If the sim dies before
// COMMIT, neither the charge nor its callback exists and the client (which got no answer) may
// retry with the same key: the retry executes afresh. After COMMIT both exist; a retry replays.
ExecuteResult Ledger::execute(const ChargeParams& params, const ChargeTiming& timing,
                              CallbackCopies copies) {
  const std::string hash = request_hash(params);
  LedgerDb::Transaction tx(db_);
  if (auto kept = retained_key("charges", params.reference, hash, timing.now))
    return ExecuteResult{kept->kind, stored(find_by_id(kept->id), kept->id)};  // read only
  Charge created = insert_charge(params, hash, timing);
  enqueue_callback(created, timing.now, copies);
  tx.commit();
  return ExecuteResult{ExecuteKind::created, std::move(created)};
}

// Crash timeline: as for charges, one BEGIN IMMEDIATE transaction holds the refund, its
// callback and the read of the charge's refunded sum: the sum cannot change between the read
// and the insert, and a crash before COMMIT leaves neither the refund nor its callback.
RefundResult Ledger::execute(const RefundParams& params, const ChargeTiming& timing,
                             CallbackCopies copies) {
  const std::string hash = request_hash(params);
  LedgerDb::Transaction tx(db_);
  if (auto kept = retained_key("refunds", params.reference, hash, timing.now))
    return RefundResult{kept->kind, stored(find_refund_by_id(kept->id), kept->id)};
  // A refused refund rolls back (the key of a lapsed row stays as it was) and stores nothing.
  const auto charge = find_by_id(params.charge);
  const auto refused = [&params](ExecuteKind kind) {
    RefundResult r{kind, Refund{}};
    r.refund.params = params;
    return r;
  };
  if (!charge) return refused(ExecuteKind::charge_not_found);
  if (charge->params.currency != params.currency) return refused(ExecuteKind::currency_mismatch);
  std::int64_t committed = 0;
  if (auto sum = db_.query("SELECT COALESCE(SUM(amount_minor), 0) FROM refunds "
                           "WHERE charge_id = ?1 AND status IN ('succeeded', 'pending')",
                           charge->id);
      sum.next())
    committed = sum.integer(0);
  Refund created =
      insert_refund(params, hash, decide_refund(*charge, committed, params.amount_minor), timing);
  enqueue_callback(created, timing.now, copies);
  tx.commit();
  return RefundResult{ExecuteKind::created, std::move(created)};
}

std::optional<Ledger::Retained> Ledger::retained_key(const char* table, const std::string& key,
                                                     const std::string& hash, UnixMillis now) {
  std::optional<Retained> kept;
  std::int64_t expires_at = 0;
  {
    auto find = db_.query(std::string("SELECT id, request_hash, key_expires_at FROM ") + table +
                              " WHERE idempotency_key = ?1 AND key_forgotten = 0",
                          key);
    if (!find.next()) return std::nullopt;
    kept = Retained{find.text(0), find.text(1) == hash ? ExecuteKind::replayed : ExecuteKind::mismatch};
    expires_at = find.integer(2);
  }
  if (expires_at > now) return kept;
  // Retention lapsed: the key is forgotten, and this request is new.
  db_.run(std::string("UPDATE ") + table + " SET key_forgotten = 1 WHERE id = ?1", kept->id);
  return std::nullopt;
}

Charge Ledger::insert_charge(const ChargeParams& params, const std::string& hash,
                             const ChargeTiming& timing) {
  const Outcome outcome = decide_outcome(params.source);
  Charge c;
  c.id = "ch_" + ulid(timing.now, rng_);
  c.params = params;
  c.status = outcome.status;
  c.decline_code = outcome.decline_code;
  c.created_at = c.updated_at = timing.now;
  c.key_expires_at = timing.now + timing.key_retention.count();
  std::optional<std::int64_t> settles_at;
  if (c.status == ChargeStatus::pending) settles_at = timing.now + timing.pending_delay.count();
  db_.run("INSERT INTO charges (id, idempotency_key, reference, amount_minor, currency, payee, "
          "source, status, decline_code, request_hash, created_at, updated_at, key_expires_at, "
          "settles_at) VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12)",
          c.id, params.reference, params.amount_minor, params.currency, params.payee,
          params.source, to_string(c.status), c.decline_code, hash, c.created_at,
          c.key_expires_at, settles_at);
  return c;
}

Refund Ledger::insert_refund(const RefundParams& params, const std::string& hash,
                             const Outcome& outcome, const ChargeTiming& timing) {
  Refund r;
  r.id = "rf_" + ulid(timing.now, rng_);
  r.params = params;
  r.status = outcome.status;
  r.decline_code = outcome.decline_code;
  r.created_at = r.updated_at = timing.now;
  r.key_expires_at = timing.now + timing.key_retention.count();
  std::optional<std::int64_t> settles_at;
  if (r.status == ChargeStatus::pending) settles_at = timing.now + timing.pending_delay.count();
  db_.run("INSERT INTO refunds (id, idempotency_key, reference, charge_id, amount_minor, "
          "currency, status, decline_code, request_hash, created_at, updated_at, "
          "key_expires_at, settles_at) VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11)",
          r.id, params.reference, params.charge, params.amount_minor, params.currency,
          to_string(r.status), r.decline_code, hash, r.created_at, r.key_expires_at, settles_at);
  return r;
}

void Ledger::enqueue_callback(const Charge& c, UnixMillis now, CallbackCopies copies) {
  enqueue_event(c.id, std::nullopt, event_type(c.status), charge_json(c), now, copies);
}

void Ledger::enqueue_callback(const Refund& r, UnixMillis now, CallbackCopies copies) {
  enqueue_event(r.params.charge, r.id, refund_event_type(r.status), refund_json(r), now, copies);
}

void Ledger::enqueue_event(const std::string& charge_id, const std::optional<std::string>& refund_id,
                           const std::string& type, json::object data, UnixMillis now,
                           CallbackCopies copies) {
  if (!copies || *copies <= 0) return;
  const std::string event_id = "evt_" + ulid(now, rng_);
  db_.run("INSERT INTO callbacks (event_id, charge_id, refund_id, type, body, created_at, "
          "next_attempt_at, copies_left, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, 'queued')",
          event_id, charge_id, refund_id, type,
          event_body(event_id, type, now / 1000, std::move(data)), now, *copies);
}

std::vector<Charge> Ledger::select_charges(const char* where_sql, const std::string& param) {
  const std::string sql = std::string(charge_columns) + where_sql;
  auto s = param.empty() ? db_.query(sql) : db_.query(sql, param);
  std::vector<Charge> out;
  while (s.next()) out.push_back(read_charge(s));
  return out;
}

std::vector<Charge> Ledger::find_by_reference(const std::string& reference) {
  if (reference.empty()) return {};
  return select_charges("WHERE reference = ?1 ORDER BY created_at, id", reference);
}

std::optional<Charge> Ledger::find_by_id(const std::string& id) {
  if (id.empty()) return std::nullopt;
  auto found = select_charges("WHERE id = ?1", id);
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<Charge> Ledger::all_charges() { return select_charges("ORDER BY created_at, id", ""); }

std::vector<Refund> Ledger::select_refunds(const char* where_sql, const std::string& param) {
  const std::string sql = std::string(refund_columns) + where_sql;
  auto s = param.empty() ? db_.query(sql) : db_.query(sql, param);
  std::vector<Refund> out;
  while (s.next()) out.push_back(read_refund(s));
  return out;
}

std::vector<Refund> Ledger::find_refunds_by_reference(const std::string& reference) {
  if (reference.empty()) return {};
  return select_refunds("WHERE reference = ?1 ORDER BY created_at, id", reference);
}

std::optional<Refund> Ledger::find_refund_by_id(const std::string& id) {
  if (id.empty()) return std::nullopt;
  auto found = select_refunds("WHERE id = ?1", id);
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<Refund> Ledger::all_refunds() { return select_refunds("ORDER BY created_at, id", ""); }

// Crash timeline: each settlement (status change + its callback) is its own transaction. A
// crash in between leaves the row pending with its settles_at in the past; the next tick
// after restart settles it.
std::vector<std::string> Ledger::settle_pending(
    const char* table, UnixMillis now, const std::function<void(const std::string&)>& announce) {
  std::vector<std::string> due;
  {
    auto s = db_.query(std::string("SELECT id FROM ") + table +
                           " WHERE status = 'pending' AND settles_at <= ?1 "
                           "ORDER BY settles_at LIMIT 100",
                       now);
    while (s.next()) due.push_back(s.text(0));
  }
  std::vector<std::string> settled;
  for (const std::string& id : due) {
    LedgerDb::Transaction tx(db_);
    const int changed = db_.run(std::string("UPDATE ") + table +
                                    " SET status = 'succeeded', settles_at = NULL, updated_at = ?2 "
                                    "WHERE id = ?1 AND status = 'pending'",
                                id, now);
    if (changed != 1) continue;
    announce(id);
    tx.commit();
    settled.push_back(id);
  }
  return settled;
}

std::vector<Charge> Ledger::settle_due(UnixMillis now, CallbackCopies copies) {
  std::vector<Charge> settled;
  settle_pending("charges", now, [&](const std::string& id) {
    settled.push_back(stored(find_by_id(id), id));
    enqueue_callback(settled.back(), now, copies);
  });
  return settled;
}

std::vector<Refund> Ledger::settle_due_refunds(UnixMillis now, CallbackCopies copies) {
  std::vector<Refund> settled;
  settle_pending("refunds", now, [&](const std::string& id) {
    settled.push_back(stored(find_refund_by_id(id), id));
    enqueue_callback(settled.back(), now, copies);
  });
  return settled;
}

std::vector<QueuedCallback> Ledger::due_callbacks(UnixMillis now, std::size_t limit,
                                                  const std::vector<std::string>& busy) {
  auto s = db_.query(
      "SELECT event_id, body, created_at, attempts FROM callbacks "
      "WHERE state = 'queued' AND next_attempt_at <= ?1 ORDER BY next_attempt_at, event_id",
      now);
  std::vector<QueuedCallback> out;
  while (out.size() < limit && s.next()) {
    QueuedCallback c{s.text(0), s.text(1), s.integer(2), s.integer(3)};
    if (std::find(busy.begin(), busy.end(), c.event_id) != busy.end()) continue;
    out.push_back(std::move(c));
  }
  return out;
}

void Ledger::callback_acked(const std::string& event_id, UnixMillis now) {
  db_.run("UPDATE callbacks SET attempts = attempts + 1, copies_left = copies_left - 1, "
          "next_attempt_at = ?2, last_error = NULL, "
          "state = CASE WHEN copies_left <= 1 THEN 'delivered' ELSE 'queued' END "
          "WHERE event_id = ?1 AND state = 'queued'",
          event_id, now);
}

void Ledger::callback_failed(const std::string& event_id,
                             std::optional<UnixMillis> next_attempt_at, const std::string& error) {
  db_.run("UPDATE callbacks SET attempts = attempts + 1, last_error = ?3, "
          "next_attempt_at = COALESCE(?2, next_attempt_at), "
          "state = CASE WHEN ?2 IS NULL THEN 'expired' ELSE 'queued' END "
          "WHERE event_id = ?1 AND state = 'queued'",
          event_id, next_attempt_at, error);
}

json::array Ledger::callbacks_json() {
  auto s = db_.query(
      "SELECT event_id, charge_id, type, state, attempts, copies_left, created_at, "
      "next_attempt_at, last_error, refund_id FROM callbacks ORDER BY created_at, event_id");
  json::array out;
  while (s.next()) {
    json::object o;
    o["event_id"] = s.text(0);
    o["charge_id"] = s.text(1);
    o["type"] = s.text(2);
    o["state"] = s.text(3);
    o["attempts"] = s.integer(4);
    o["copies_left"] = s.integer(5);
    o["created_at"] = s.integer(6);
    o["next_attempt_at"] = s.integer(7);
    const auto error = s.maybe_text(8);
    o["last_error"] = error ? json::value(*error) : json::value(nullptr);
    const auto refund_id = s.maybe_text(9);
    o["refund_id"] = refund_id ? json::value(*refund_id) : json::value(nullptr);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace payorch::vendor_sim
