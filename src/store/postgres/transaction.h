#pragma once
// One transaction per effect on PostgreSQL, run again when it loses a conflict. A serialization
// failure (40001) or a deadlock (40P01) says nothing about the request: the transaction is run
// again from the start, a bounded number of times, and then answered as a conflict (503) —
// never as a duplicate, which only a unique constraint or a stored row can say. A COMMIT whose
// outcome the connection took with it is its own status: the caller treats it like any unknown
// commit (docs/contract.md §2: the client retries with the same key and gets a replay).
#include <functional>
#include <optional>
#include <string>

#include "store/postgres/connection.h"

namespace payorch::store::pg {

enum class Isolation { read_committed, repeatable_read, serializable };

struct RetryPolicy {
  // Runs of the transaction in all, the first included (1: never run again). Each run after
  // the first follows a serialization failure or a deadlock of the run before, at once: the
  // transaction it lost to has committed or rolled back by the time the server says so.
  int max_attempts = 5;
};

enum class TxStatus {
  committed,        // COMMIT succeeded: the work is durable
  conflict,         // every run lost a serialization conflict or a deadlock: nothing written
  rejected,         // the work failed otherwise (its error, a constraint): nothing written
  connection_lost,  // the connection broke before COMMIT was sent: nothing written
  commit_unknown,   // the connection broke during COMMIT: written or not, nobody knows yet
};
std::string_view to_string(TxStatus s);

struct TxResult {
  TxStatus status = TxStatus::committed;
  int attempts = 0;                    // runs of the work
  std::optional<ErrorKind> error_kind; // the last run's pg::Error, if that is how it failed
  std::string sqlstate;                // its SQLSTATE, "" if none
  std::string error;                   // what went wrong, "" when committed
  bool committed() const { return status == TxStatus::committed; }
};

// Runs `work` between BEGIN ISOLATION LEVEL `isolation` and COMMIT on `conn`, again (up to
// policy.max_attempts runs in all) when the work or its COMMIT fails with a serialization
// failure or a deadlock, and never after any other failure. `work` may therefore run more than
// once: it must derive what it writes from the database and its inputs, and keep effects
// outside the database until the result says committed. Anything `work` throws rolls the run
// back; a pg::Error is classified as above, any other exception is `rejected` with its what().
// `conn` must not be inside a transaction. After connection_lost or commit_unknown it is
// closed (conn.ok() is false); the caller opens another.
TxResult run_transaction(Connection& conn, Isolation isolation, const RetryPolicy& policy,
                         const std::function<void(Connection&)>& work);

}  // namespace payorch::store::pg
