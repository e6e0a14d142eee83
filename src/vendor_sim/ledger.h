#pragma once
// The sim vendor's durable ledger: its own SQLite file (WAL, synchronous=FULL), holding the
// charges and the callback queue. A charge and the callback announcing its status are written
// in one transaction, so after any crash the file holds either both or neither.
//
// Tests read the file directly (e.g. SELECT COUNT(*) FROM charges WHERE reference = ?), so the
// schema below is part of the sim's contract:
//
//   charges    id TEXT PK ("ch_" + ULID), idempotency_key, reference, amount_minor, currency,
//              payee, source, status ('succeeded'|'declined'|'pending'), decline_code (NULL
//              unless declined), request_hash (hex SHA-256 of the canonical five fields),
//              created_at, updated_at, key_expires_at (created_at + --key-retention),
//              key_forgotten (1 once the key lapsed and was used again), settles_at (pending
//              only: when it becomes succeeded). Times are sim-clock Unix milliseconds.
//              idempotency_key is UNIQUE among retained keys (key_forgotten = 0).
//   callbacks  event_id TEXT PK ("evt_" + ULID), charge_id, type, body (the exact bytes
//              POSTed), created_at, next_attempt_at, attempts, copies_left (deliveries still
//              owed: 2 with duplicate_callbacks), state ('queued'|'delivered'|'expired'),
//              last_error.
//
// Not thread-safe: one thread (the sim's logic thread) owns it. Methods throw LedgerError; a
// throw from a method that writes means it may or may not have committed.
#include <boost/json/array.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "vendor_sim/charge.h"
#include "vendor_sim/ledger_db.h"

namespace payorch::vendor_sim {

// How many deliveries a new callback is owed; nullopt = queue none (callbacks off).
using CallbackCopies = std::optional<int>;

enum class ExecuteKind {
  created,   // a new charge was committed (the key was new, or its retention had lapsed)
  replayed,  // the retained key was seen with the same request_hash: the stored charge
  mismatch,  // the retained key was seen with another request_hash: nothing changed
};

struct ExecuteResult {
  ExecuteKind kind = ExecuteKind::created;
  Charge charge;  // the new or the stored charge
};

struct ChargeTiming {
  UnixMillis now = 0;       // sim clock
  Millis key_retention{0};
  Millis pending_delay{0};
};

struct QueuedCallback {
  std::string event_id;
  std::string body;
  UnixMillis created_at = 0;
  std::int64_t attempts = 0;
};

class Ledger {
public:
  // Opens (creating if needed) the file and its schema. Throws on failure or on a file made
  // by a newer schema.
  Ledger(const std::string& path, Random& rng);

  // The idempotent charge decision, in one transaction: a retained key with the same hash
  // replays, with another hash is a mismatch; a lapsed key is marked forgotten and a NEW
  // charge is created (how a late retry double-charges at a real vendor).
  ExecuteResult execute(const ChargeParams& params, const ChargeTiming& timing,
                        CallbackCopies copies);

  std::vector<Charge> find_by_reference(const std::string& reference);
  std::optional<Charge> find_by_id(const std::string& id);
  std::vector<Charge> all_charges();

  // Every pending charge with settles_at <= now becomes succeeded, each with its callback, one
  // transaction per charge. Returns the settled charges.
  std::vector<Charge> settle_due(UnixMillis now, CallbackCopies copies);

  // Queued callbacks with next_attempt_at <= now, oldest first, at most `limit`, skipping
  // `busy` (deliveries in flight).
  std::vector<QueuedCallback> due_callbacks(UnixMillis now, std::size_t limit,
                                            const std::vector<std::string>& busy);
  // A 2xx: one copy delivered; the callback is done when none is left, else due again now.
  void callback_acked(const std::string& event_id, UnixMillis now);
  // A failed attempt: retried at next_attempt_at, or given up (state 'expired') when nullopt.
  void callback_failed(const std::string& event_id, std::optional<UnixMillis> next_attempt_at,
                       const std::string& error);
  // GET /_sim/callbacks.
  boost::json::array callbacks_json();

private:
  void create_schema();
  Charge insert_charge(const ChargeParams& params, const std::string& hash,
                       const ChargeTiming& timing);
  void enqueue_callback(const Charge& c, UnixMillis now, CallbackCopies copies);
  std::vector<Charge> select_charges(const char* where_sql, const std::string& param);

  LedgerDb db_;
  Random& rng_;
};

}  // namespace payorch::vendor_sim
