#pragma once
// A thin RAII layer over the SQLite C API, and the two hooks a connection carries for the
// store's functions: actions that run once its transaction has committed, and the observer told
// about the payment state changes it committed. Failures throw SqliteError carrying the result
// code; the store's public functions catch it at their boundary and return a status, so request
// and worker paths never see an exception.
#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/state_machine.h"

namespace payorch::store {

class SqliteError : public std::runtime_error {
public:
  SqliteError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }  // extended result code
  int primary() const { return code_ & 0xff; }
  bool busy() const { return primary() == SQLITE_BUSY || primary() == SQLITE_LOCKED; }
  bool unique_violation() const { return code_ == SQLITE_CONSTRAINT_UNIQUE || code_ == SQLITE_CONSTRAINT_PRIMARYKEY; }

private:
  int code_;
};

// The kind of storage failure a result code is, for readiness, /status and
// payorch_storage_errors_total; "" when the code is not a storage failure (a constraint, a
// job's own error), so a job that fails with it is refused alone and the others commit:
//   "full"      the disk (or the quota) is full
//   "io"        an I/O error: a failing disk, a file system remounted read-only
//   "readonly"  the database cannot be written: write-protected when it was opened, or moved
//   "busy"      locked by another process through every retry
//   "corrupt"   the file is damaged or not a database
//   "cantopen"  a file (journal, -wal, a temporary file) cannot be opened or created
//   "nomem"     SQLite ran out of memory
std::string_view storage_error_kind(int code);
// Every kind above, and "other" (a failed transaction that is not SQLite's), in one order.
const std::vector<std::string_view>& storage_error_kinds();

class Stmt;

class Db {
public:
  enum class Mode { read_write_create, read_write, read_only };
  Db(const std::string& path, Mode mode);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(std::string_view sql);
  Stmt prepare(std::string_view sql);
  sqlite3* handle() const { return db_; }
  int changes() const { return sqlite3_changes(db_); }
  // Rows inserted, updated or deleted on this connection since it opened (triggers' included).
  std::int64_t total_changes() const { return sqlite3_total_changes64(db_); }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(int rc, std::string_view context) const;

  // Runs `action` once the current transaction has committed — for effects outside the
  // database that must reflect only durable changes (counting a transition in /metrics).
  // Dropped if the transaction, or the Writer job's savepoint, rolls back. Outside a
  // transaction the write already committed, so it runs at once. Actions must not throw.
  void after_commit(std::function<void()> action);
  // For the owner of the transaction (Writer, Transaction): the actions registered so far are
  // a prefix of length mark(); discard_after(mark) drops those registered since (a rolled-back
  // savepoint), run_after_commit() runs and clears them all after COMMIT.
  std::size_t after_commit_mark() const { return after_commit_.size(); }
  void discard_after_commit(std::size_t mark);
  void run_after_commit();

  // Told, after commit, about every payment state change made on this connection (from != to;
  // store/transitions.h calls it from an after-commit action, so never about a change that
  // rolled back). Empty: nobody is told. The daemon's Writer sets it from
  // WriterOptions::transitions to count them for /metrics.
  using TransitionObserver = std::function<void(PaymentState from, PaymentState to)>;
  void set_transition_observer(TransitionObserver observer) { transition_observer_ = std::move(observer); }
  const TransitionObserver& transition_observer() const { return transition_observer_; }

  // Prepared statements are kept per connection and reused (keyed by their SQL text): the
  // store prepares the same few dozen statements over and over, and compiling them dominated
  // the cost of a small transaction. A Stmt must not outlive its Db.
  sqlite3_stmt* acquire(std::string_view sql);
  void release(sqlite3_stmt* stmt);

private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::vector<std::function<void()>> after_commit_;
  TransitionObserver transition_observer_;
  std::unordered_map<std::string, std::vector<sqlite3_stmt*>> idle_;
};

class Stmt {
public:
  Stmt(Db& db, std::string_view sql);
  ~Stmt();
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Binding is 1-based, as in SQLite.
  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind_null(int i);
  template <class T>
  Stmt& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }

  // True while a row is available.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  void reset();

  std::int64_t col_int(int i) const { return sqlite3_column_int64(stmt_, i); }
  std::string col_text(int i) const;
  bool col_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  std::optional<std::string> col_opt_text(int i) const;
  std::optional<std::int64_t> col_opt_int(int i) const;

private:
  Db* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back on scope exit unless committed.
class Transaction {
public:
  explicit Transaction(Db& db);
  ~Transaction();
  void commit();

private:
  Db& db_;
  bool done_ = false;
};

// Sets WAL, synchronous=FULL, foreign keys and a busy timeout on a connection.
void configure_connection(Db& db, int busy_timeout_ms);

}  // namespace payorch::store
