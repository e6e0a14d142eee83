#include "vendor_sim/ledger.h"

#include <boost/json/object.hpp>

#include <algorithm>
#include <stdexcept>

#include "core/ids.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

constexpr int schema_version = 1;

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

constexpr const char* charge_columns =
    "SELECT id, reference, amount_minor, currency, payee, source, status, decline_code, "
    "created_at, updated_at, key_expires_at, request_hash FROM charges ";

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
  tx.commit();
}

// Crash timeline: everything below is one BEGIN IMMEDIATE transaction. If the sim dies before
// COMMIT, neither the charge nor its callback exists and the client (which got no answer) may
// retry with the same key: the retry executes afresh. After COMMIT both exist; a retry replays.
ExecuteResult Ledger::execute(const ChargeParams& params, const ChargeTiming& timing,
                              CallbackCopies copies) {
  const std::string hash = request_hash(params);
  LedgerDb::Transaction tx(db_);
  std::optional<Charge> stored;
  std::string stored_hash;
  {
    auto find = db_.query(std::string(charge_columns) +
                              "WHERE idempotency_key = ?1 AND key_forgotten = 0",
                          params.reference);
    if (find.next()) {
      stored = read_charge(find);
      stored_hash = find.text(11);
    }
  }
  if (stored && stored->key_expires_at > timing.now) {
    const ExecuteKind kind = stored_hash == hash ? ExecuteKind::replayed : ExecuteKind::mismatch;
    return ExecuteResult{kind, std::move(*stored)};  // read only: the rollback changes nothing
  }
  // Retention lapsed: the key is forgotten, and this request is a new charge.
  if (stored) db_.run("UPDATE charges SET key_forgotten = 1 WHERE id = ?1", stored->id);
  Charge created = insert_charge(params, hash, timing);
  enqueue_callback(created, timing.now, copies);
  tx.commit();
  return ExecuteResult{ExecuteKind::created, std::move(created)};
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

void Ledger::enqueue_callback(const Charge& c, UnixMillis now, CallbackCopies copies) {
  if (!copies || *copies <= 0) return;
  const std::string event_id = "evt_" + ulid(now, rng_);
  db_.run("INSERT INTO callbacks (event_id, charge_id, type, body, created_at, next_attempt_at, "
          "copies_left, state) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, 'queued')",
          event_id, c.id, event_type(c.status), callback_body(event_id, c.status, now / 1000, c),
          now, *copies);
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

// Crash timeline: each settlement (status change + its callback) is its own transaction. A
// crash in between leaves the charge pending with its settles_at in the past; the next tick
// after restart settles it.
std::vector<Charge> Ledger::settle_due(UnixMillis now, CallbackCopies copies) {
  std::vector<std::string> due;
  {
    auto s = db_.query(
        "SELECT id FROM charges WHERE status = 'pending' AND settles_at <= ?1 "
        "ORDER BY settles_at LIMIT 100",
        now);
    while (s.next()) due.push_back(s.text(0));
  }
  std::vector<Charge> settled;
  for (const std::string& id : due) {
    LedgerDb::Transaction tx(db_);
    const int changed = db_.run(
        "UPDATE charges SET status = 'succeeded', settles_at = NULL, updated_at = ?2 "
        "WHERE id = ?1 AND status = 'pending'",
        id, now);
    if (changed != 1) continue;
    auto charge = find_by_id(id);
    if (!charge) continue;
    enqueue_callback(*charge, now, copies);
    tx.commit();
    settled.push_back(std::move(*charge));
  }
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
      "next_attempt_at, last_error FROM callbacks ORDER BY created_at, event_id");
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
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace payorch::vendor_sim
