#pragma once
// The simulated payorch process's database, on either driver: one connection, as the daemon's
// writer holds one, a store::Tx over it for the store's operations, and the few reads of raw
// rows the checker and the event loop need that Tx does not offer. Everything the simulation
// writes goes through the Tx; the SQL here only reads.
//
// SQLite: a copy of a migrated template file per seed (sqlite_database.cpp). PostgreSQL: a
// database per seed, made from a migrated template database (postgres_database.h).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/state_machine.h"
#include "store/store.h"

namespace payorch::dst {

// A payment's row as the checker compares it before and after a transaction.
struct Row {
  std::string id;
  PaymentState state = PaymentState::processing;
  std::int64_t fence = 0;
  std::int64_t attempt_count = 0;
  UnixMillis next_attempt_at = 0;
  bool submit_in_flight = false;
  std::int64_t amount = 0;
  std::string currency;
  std::int64_t cases = 0;  // reconciliation cases ever opened for it
  // Refunds (docs/refunds.md): a refund row names its payment; a DEFERRED one is stored
  // PROCESSING with `deferred`. A payment keeps the sums of its refunds.
  std::string refund_of;   // empty for a payment
  bool deferred = false;
  std::int64_t amount_refunded = 0;  // amount_refunded_minor: its SUCCEEDED refunds
  std::int64_t amount_reserved = 0;  // amount_reserved_minor: its refunds not FAILED_FINAL
  std::string lease_owner;           // empty: not leased
  UnixMillis lease_expires_at = 0;   // 0: not leased
};

struct Snapshot {
  std::map<std::string, Row> rows;
  std::int64_t outbox_seq = 0;
};

// An outbox event, as the checker reads the feed.
struct OutboxEntry {
  std::string payment_id;
  std::string type;
};

// A payment once the run has settled, beside the vendor's ledger.
struct FinalRow {
  std::string id;
  std::string client_key;
  PaymentState state = PaymentState::processing;
  bool open_case = false;
  bool was_unknown = false;  // it wrote a payment.unknown or refund.unknown event at some point
  std::string refund_of;     // a refund's payment; empty for a payment
  bool deferred = false;
  std::int64_t amount = 0;
  std::int64_t amount_refunded = 0;
};

class Database {
public:
  virtual ~Database() = default;

  // The store's operations on the connection: inside begin() .. commit() those of the
  // transaction, otherwise each read sees what is committed.
  virtual store::Tx& tx() = 0;
  // BEGIN: SQLite's BEGIN IMMEDIATE, as the writer; PostgreSQL's READ COMMITTED, as PgStore's
  // jobs.
  virtual void begin() = 0;
  // COMMIT, then the transaction's after_commit actions.
  virtual void commit() = 0;
  // ROLLBACK of the open transaction (a body that threw).
  virtual void rollback() = 0;
  // The process dies: the connection is closed without committing what is open, and a new one
  // is opened, as a restarted payorchd would.
  virtual void crash() = 0;

  // Rows inserted, updated or deleted on this connection, counted at least from the start of
  // the open transaction: the difference across a call is what that call wrote.
  virtual std::int64_t rows_written() = 0;

  // Reads of committed rows, outside any transaction.
  virtual Snapshot snapshot() = 0;
  // The outbox's events with seq > `after`, in seq order.
  virtual std::vector<OutboxEntry> outbox_after(std::int64_t after) = 0;
  // Every payment, by id.
  virtual std::vector<FinalRow> final_rows() = 0;
  // Payments that ever had a reconciliation case.
  virtual std::int64_t payments_escalated() = 0;
  // "ok", or what the database's own integrity check reports.
  virtual std::string integrity_check() = 0;

  // When the first automatic work left becomes due (its lease lapsed); nullopt when there is
  // none.
  virtual std::optional<UnixMillis> next_due() = 0;
  // PROCESSING or UNKNOWN payments without an open case.
  virtual std::int64_t unsettled() = 0;
};

// The SQLite database of seed `seed`: a copy of the template file (migrated once per process),
// removed when the Database is destroyed.
std::unique_ptr<Database> open_sqlite_database(std::uint64_t seed);

}  // namespace payorch::dst
