#pragma once
// The sim vendor's durable ledger: its own SQLite file (WAL, synchronous=FULL), holding the
// charges, their refunds and the callback queue. A charge or a refund and the callback
// announcing its status are written in one transaction, so after any crash the file holds
// either both or neither.
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
//   refunds    id TEXT PK ("rf_" + ULID), idempotency_key, reference, charge_id (the refunded
//              charge), amount_minor, currency, status ('succeeded'|'declined'|'pending'),
//              decline_code, request_hash (hex SHA-256 of the canonical four fields),
//              created_at, updated_at, key_expires_at, key_forgotten, settles_at: as charges.
//              Only refunds of a charge the ledger holds, in its currency, are stored.
//   callbacks  event_id TEXT PK ("evt_" + ULID), charge_id (for a refund's callback: the
//              refunded charge), refund_id (NULL for a charge's callback), type, body (the
//              exact bytes POSTed), created_at, next_attempt_at, attempts, copies_left
//              (deliveries still owed: 2 with duplicate_callbacks), state
//              ('queued'|'delivered'|'expired'), last_error.
//
// Not thread-safe: one thread (the sim's logic thread) owns it. Methods throw LedgerError; a
// throw from a method that writes means it may or may not have committed.
#include <boost/json/array.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "vendor_sim/charge.h"
#include "vendor_sim/ledger_db.h"
#include "vendor_sim/refund.h"

namespace payorch::vendor_sim {

// How many deliveries a new callback is owed; nullopt = queue none (callbacks off).
using CallbackCopies = std::optional<int>;

enum class ExecuteKind {
  created,   // a new charge was committed (the key was new, or its retention had lapsed)
  replayed,  // the retained key was seen with the same request_hash: the stored charge
  mismatch,  // the retained key was seen with another request_hash: nothing changed
  // Refunds only; nothing changed, nothing stored, the key stays free:
  charge_not_found,   // the refunded charge is not in the ledger
  currency_mismatch,  // the refund's currency is not its charge's
};

struct ExecuteResult {
  ExecuteKind kind = ExecuteKind::created;
  Charge charge;  // the new or the stored charge
};

struct RefundResult {
  ExecuteKind kind = ExecuteKind::created;
  Refund refund;  // the new or the stored refund (for charge_not_found and currency_mismatch:
                  // only its params)
};

// Key retention and pending delay apply to refunds as to charges.
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

  // The idempotent refund decision, in one transaction: the key rules of execute(), then (for
  // a new refund) the charge's existence and currency, and decide_refund() against the sum of
  // the charge's succeeded and pending refunds read in the same transaction, so concurrent
  // refunds can never together exceed the charge. A stored refund gets its callback.
  RefundResult execute(const RefundParams& params, const ChargeTiming& timing,
                       CallbackCopies copies);

  std::vector<Charge> find_by_reference(const std::string& reference);
  std::optional<Charge> find_by_id(const std::string& id);
  std::vector<Charge> all_charges();
  std::vector<Refund> find_refunds_by_reference(const std::string& reference);
  std::optional<Refund> find_refund_by_id(const std::string& id);
  std::vector<Refund> all_refunds();

  // Every pending charge with settles_at <= now becomes succeeded, each with its callback, one
  // transaction per charge. Returns the settled charges.
  std::vector<Charge> settle_due(UnixMillis now, CallbackCopies copies);
  // The same for pending refunds.
  std::vector<Refund> settle_due_refunds(UnixMillis now, CallbackCopies copies);

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
  struct Retained {
    std::string id;
    ExecuteKind kind;  // replayed or mismatch
  };
  void create_schema();
  // The key rule of charges and refunds, inside the caller's transaction: the row of `table`
  // holding `key` while its retention lasts, replayed when `hash` matches; a lapsed key is
  // marked forgotten and nullopt returned (the request is new).
  std::optional<Retained> retained_key(const char* table, const std::string& key,
                                       const std::string& hash, UnixMillis now);
  // Each pending row of `table` due at `now`: one transaction that makes it succeeded and
  // calls `announce(id)` before the commit. Returns the ids settled.
  std::vector<std::string> settle_pending(const char* table, UnixMillis now,
                                          const std::function<void(const std::string&)>& announce);
  Charge insert_charge(const ChargeParams& params, const std::string& hash,
                       const ChargeTiming& timing);
  Refund insert_refund(const RefundParams& params, const std::string& hash,
                       const Outcome& outcome, const ChargeTiming& timing);
  void enqueue_callback(const Charge& c, UnixMillis now, CallbackCopies copies);
  void enqueue_callback(const Refund& r, UnixMillis now, CallbackCopies copies);
  void enqueue_event(const std::string& charge_id, const std::optional<std::string>& refund_id,
                     const std::string& type, boost::json::object data, UnixMillis now,
                     CallbackCopies copies);
  std::vector<Charge> select_charges(const char* where_sql, const std::string& param);
  std::vector<Refund> select_refunds(const char* where_sql, const std::string& param);

  LedgerDb db_;
  Random& rng_;
};

}  // namespace payorch::vendor_sim
