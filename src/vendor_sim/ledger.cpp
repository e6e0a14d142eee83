#include "vendor_sim/ledger.h"

#include <boost/json/object.hpp>

#include <algorithm>
#include <stdexcept>

#include "core/ids.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

constexpr int schema_version = 1;
constexpr int busy_timeout_ms = 5'000;

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

Charge read_charge(const store::Stmt& s) {
  Charge c;
  c.id = s.col_text(0);
  c.params.reference = s.col_text(1);
  c.params.amount_minor = s.col_int(2);
  c.params.currency = s.col_text(3);
  c.params.payee = s.col_text(4);
  c.params.source = s.col_text(5);
  const auto status = parse_charge_status(s.col_text(6));
  if (!status) throw std::runtime_error("ledger: charge " + c.id + " has an unknown status");
  c.status = *status;
  c.decline_code = s.col_opt_text(7);
  c.created_at = s.col_int(8);
  c.updated_at = s.col_int(9);
  c.key_expires_at = s.col_int(10);
  return c;
}

}  // namespace

Ledger::Ledger(const std::string& path, Random& rng)
    : db_(path, store::Db::Mode::read_write_create), rng_(rng) {
  store::configure_connection(db_, busy_timeout_ms);
  create_schema();
}

void Ledger::create_schema() {
  store::Transaction tx(db_);
  auto version_stmt = db_.prepare("PRAGMA user_version");
  const std::int64_t version = version_stmt.step() ? version_stmt.col_int(0) : 0;
  if (version > schema_version)
    throw std::runtime_error("ledger " + db_.path() + " has schema version " +
                             std::to_string(version) + ", newer than this sim's " +
                             std::to_string(schema_version));
  if (version == 0) db_.exec(schema_sql);
  tx.commit();
}

// Crash timeline: everything below is one BEGIN IMMEDIATE transaction. If the sim dies before
// COMMIT, neither the charge nor its callback exists and the client (which got no answer) may
// retry with the same key: the retry executes afresh. After COMMIT both exist; a retry replays.
ExecuteResult Ledger::execute(const ChargeParams& params, const ChargeTiming& timing,
                              CallbackCopies copies) {
  const std::string hash = request_hash(params);
  store::Transaction tx(db_);
  std::optional<Charge> stored;
  std::string stored_hash;
  {
    auto find = db_.prepare(std::string(charge_columns) +
                            "WHERE idempotency_key = ?1 AND key_forgotten = 0");
    find.bind(1, params.reference);
    if (find.step()) {
      stored = read_charge(find);
      stored_hash = find.col_text(11);
    }
  }
  if (stored && stored->key_expires_at > timing.now) {
    const ExecuteKind kind = stored_hash == hash ? ExecuteKind::replayed : ExecuteKind::mismatch;
    return ExecuteResult{kind, std::move(*stored)};  // read only: the rollback changes nothing
  }
  // Retention lapsed: the key is forgotten, and this request is a new charge.
  if (stored)
    db_.prepare("UPDATE charges SET key_forgotten = 1 WHERE id = ?1").bind(1, stored->id).run();
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
  db_.prepare(
         "INSERT INTO charges (id, idempotency_key, reference, amount_minor, currency, payee, "
         "source, status, decline_code, request_hash, created_at, updated_at, key_expires_at, "
         "settles_at) VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12)")
      .bind(1, c.id)
      .bind(2, params.reference)
      .bind(3, params.amount_minor)
      .bind(4, params.currency)
      .bind(5, params.payee)
      .bind(6, params.source)
      .bind(7, to_string(c.status))
      .bind(8, c.decline_code)
      .bind(9, hash)
      .bind(10, c.created_at)
      .bind(11, c.key_expires_at)
      .bind(12, settles_at)
      .run();
  return c;
}

void Ledger::enqueue_callback(const Charge& c, UnixMillis now, CallbackCopies copies) {
  if (!copies || *copies <= 0) return;
  const std::string event_id = "evt_" + ulid(now, rng_);
  db_.prepare(
         "INSERT INTO callbacks (event_id, charge_id, type, body, created_at, next_attempt_at, "
         "copies_left, state) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, 'queued')")
      .bind(1, event_id)
      .bind(2, c.id)
      .bind(3, event_type(c.status))
      .bind(4, callback_body(event_id, c.status, now / 1000, c))
      .bind(5, now)
      .bind(6, *copies)
      .run();
}

std::vector<Charge> Ledger::select_charges(const char* where_sql, const std::string& param) {
  auto s = db_.prepare(std::string(charge_columns) + where_sql);
  if (!param.empty()) s.bind(1, param);
  std::vector<Charge> out;
  while (s.step()) out.push_back(read_charge(s));
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
    auto s = db_.prepare(
        "SELECT id FROM charges WHERE status = 'pending' AND settles_at <= ?1 "
        "ORDER BY settles_at LIMIT 100");
    s.bind(1, now);
    while (s.step()) due.push_back(s.col_text(0));
  }
  std::vector<Charge> settled;
  for (const std::string& id : due) {
    store::Transaction tx(db_);
    auto update = db_.prepare(
        "UPDATE charges SET status = 'succeeded', settles_at = NULL, updated_at = ?2 "
        "WHERE id = ?1 AND status = 'pending'");
    update.bind(1, id).bind(2, now).run();
    if (db_.changes() != 1) continue;
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
  auto s = db_.prepare(
      "SELECT event_id, body, created_at, attempts FROM callbacks "
      "WHERE state = 'queued' AND next_attempt_at <= ?1 ORDER BY next_attempt_at, event_id");
  s.bind(1, now);
  std::vector<QueuedCallback> out;
  while (out.size() < limit && s.step()) {
    QueuedCallback c{s.col_text(0), s.col_text(1), s.col_int(2), s.col_int(3)};
    if (std::find(busy.begin(), busy.end(), c.event_id) != busy.end()) continue;
    out.push_back(std::move(c));
  }
  return out;
}

void Ledger::callback_acked(const std::string& event_id, UnixMillis now) {
  db_.prepare(
         "UPDATE callbacks SET attempts = attempts + 1, copies_left = copies_left - 1, "
         "next_attempt_at = ?2, last_error = NULL, "
         "state = CASE WHEN copies_left <= 1 THEN 'delivered' ELSE 'queued' END "
         "WHERE event_id = ?1 AND state = 'queued'")
      .bind(1, event_id)
      .bind(2, now)
      .run();
}

void Ledger::callback_failed(const std::string& event_id,
                             std::optional<UnixMillis> next_attempt_at, const std::string& error) {
  db_.prepare(
         "UPDATE callbacks SET attempts = attempts + 1, last_error = ?3, "
         "next_attempt_at = COALESCE(?2, next_attempt_at), "
         "state = CASE WHEN ?2 IS NULL THEN 'expired' ELSE 'queued' END "
         "WHERE event_id = ?1 AND state = 'queued'")
      .bind(1, event_id)
      .bind(2, next_attempt_at)
      .bind(3, error)
      .run();
}

json::array Ledger::callbacks_json() {
  auto s = db_.prepare(
      "SELECT event_id, charge_id, type, state, attempts, copies_left, created_at, "
      "next_attempt_at, last_error FROM callbacks ORDER BY created_at, event_id");
  json::array out;
  while (s.step()) {
    json::object o;
    o["event_id"] = s.col_text(0);
    o["charge_id"] = s.col_text(1);
    o["type"] = s.col_text(2);
    o["state"] = s.col_text(3);
    o["attempts"] = s.col_int(4);
    o["copies_left"] = s.col_int(5);
    o["created_at"] = s.col_int(6);
    o["next_attempt_at"] = s.col_int(7);
    const auto error = s.col_opt_text(8);
    o["last_error"] = error ? json::value(*error) : json::value(nullptr);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace payorch::vendor_sim
