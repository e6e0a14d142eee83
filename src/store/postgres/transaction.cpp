#include "store/postgres/transaction.h"

#include <algorithm>

#include "core/enum_names.h"

namespace payorch::store::pg {
namespace {

constexpr EnumNames<Isolation, 3> begin_statements{{
    {Isolation::read_committed, "BEGIN ISOLATION LEVEL READ COMMITTED"},
    {Isolation::repeatable_read, "BEGIN ISOLATION LEVEL REPEATABLE READ"},
    {Isolation::serializable, "BEGIN ISOLATION LEVEL SERIALIZABLE"},
}};

constexpr EnumNames<TxStatus, 5> tx_status_names{{
    {TxStatus::committed, "committed"},
    {TxStatus::conflict, "conflict"},
    {TxStatus::rejected, "rejected"},
    {TxStatus::connection_lost, "connection_lost"},
    {TxStatus::commit_unknown, "commit_unknown"},
}};

// Ends a failed run. A ROLLBACK that fails leaves nothing to undo: the server rolls back the
// transaction of a connection that breaks.
void roll_back(Connection& conn) {
  if (!conn.ok() || !conn.in_transaction()) return;
  try {
    conn.exec("ROLLBACK");
  } catch (const Error&) {
  }
}

// How a run that failed with `e` ends the transaction; nullopt: run it again.
std::optional<TxStatus> status_of(const Error& e, bool may_run_again) {
  switch (e.kind()) {
    case ErrorKind::commit_unknown: return TxStatus::commit_unknown;
    case ErrorKind::connection_lost: return TxStatus::connection_lost;
    case ErrorKind::serialization_failure:
    case ErrorKind::deadlock:
      if (may_run_again) return std::nullopt;
      return TxStatus::conflict;
    case ErrorKind::unique_violation:
    case ErrorKind::other: return TxStatus::rejected;
  }
  return TxStatus::rejected;
}

}  // namespace

std::string_view to_string(TxStatus s) { return name_of(tx_status_names, s); }

TxResult run_transaction(Connection& conn, Isolation isolation, const RetryPolicy& policy,
                         const std::function<void(Connection&)>& work) {
  if (conn.in_transaction())
    throw std::logic_error("run_transaction: the connection is already inside a transaction");
  const int max_attempts = std::max(1, policy.max_attempts);
  TxResult result;
  for (;;) {
    ++result.attempts;
    try {
      conn.exec(name_of(begin_statements, isolation));
      work(conn);
      conn.commit();
      const int attempts = result.attempts;
      result = TxResult{};
      result.attempts = attempts;
      return result;
    } catch (const Error& e) {
      roll_back(conn);
      result.error_kind = e.kind();
      result.sqlstate = e.sqlstate();
      result.error = e.what();
      const std::optional<TxStatus> status = status_of(e, result.attempts < max_attempts);
      if (!status) continue;
      result.status = *status;
      if (result.status == TxStatus::connection_lost || result.status == TxStatus::commit_unknown)
        conn.close();
      return result;
    } catch (const std::exception& e) {
      roll_back(conn);
      result.error_kind.reset();
      result.sqlstate.clear();
      result.error = e.what();
      result.status = TxStatus::rejected;
      return result;
    }
  }
}

}  // namespace payorch::store::pg
