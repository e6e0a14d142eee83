#pragma once
// A thin RAII layer over libpq for the PostgreSQL store (docs/postgres.md). Statements are
// parameterised (values sent as text): SQL text never holds a value. Each connection prepares
// a statement text once, when first run, and runs it prepared from then on (Connection::exec).
// Failures
// throw pg::Error, classified by what the caller must do about them; as with store/sqlite.h,
// the store's public functions catch it at their boundary (run_transaction, transaction.h,
// turns it into a TxStatus), so request and worker paths never see an exception.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

namespace payorch::store::pg {

enum class ErrorKind {
  serialization_failure,  // SQLSTATE 40001: the transaction lost a conflict; run it again whole
  deadlock,               // 40P01: likewise (the server chose this transaction as the victim)
  unique_violation,       // 23505: a unique constraint refused the row (Error::constraint())
  connection_lost,        // the connection is gone, or never opened: nothing of the open
                          // transaction is written (the server rolls it back)
  commit_unknown,         // the connection was lost while COMMIT was in flight: the
                          // transaction may or may not have committed
  other,                  // any other error (Error::sqlstate() says which)
};
std::string_view to_string(ErrorKind kind);

// What a failed statement means, from its SQLSTATE ("" when the server sent none) and whether
// the connection is still up afterwards: a lost connection wins over any SQLSTATE (a server
// that is shutting down sends 57P01 and closes); no SQLSTATE means no answer from the server;
// class 08 (connection exception) and 57P01-57P03 (the server is going away) are losses too.
ErrorKind classify(std::string_view sqlstate, bool connection_ok);

class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, std::string sqlstate, std::string constraint, const std::string& what)
      : std::runtime_error(what),
        kind_(kind),
        sqlstate_(std::move(sqlstate)),
        constraint_(std::move(constraint)) {}
  ErrorKind kind() const { return kind_; }
  const std::string& sqlstate() const { return sqlstate_; }      // "" when the server sent none
  const std::string& constraint() const { return constraint_; }  // the constraint, when named
  // A conflict between transactions, which running the transaction again can resolve.
  bool retryable() const {
    return kind_ == ErrorKind::serialization_failure || kind_ == ErrorKind::deadlock;
  }

private:
  ErrorKind kind_;
  std::string sqlstate_;
  std::string constraint_;
};

// `url` with any password replaced by "****" (in the user info and in a password= parameter),
// for messages and logs: "postgresql://payorch:****@db.internal:5432/payorch".
std::string redacted_url(std::string_view url);

// One statement parameter, sent as text; std::nullopt (or an empty optional) sends NULL.
class Param {
public:
  Param(std::nullopt_t) {}
  Param(std::string_view v) : value_(std::string(v)) {}
  Param(const std::string& v) : value_(v) {}
  Param(const char* v) : value_(std::string(v)) {}
  Param(bool v) : value_(v ? "true" : "false") {}
  template <std::integral I>
    requires(!std::same_as<I, bool> && !std::same_as<I, char>)
  Param(I v) : value_(std::to_string(v)) {}
  template <class T>
  Param(const std::optional<T>& v) {
    if (v) *this = Param(*v);
  }
  const char* c_str() const { return value_ ? value_->c_str() : nullptr; }

private:
  std::optional<std::string> value_;
};

// `values` as a text[] parameter (an array literal, every element quoted), for
// `col = ANY($n::text[])` in place of an IN list of variable length.
std::string text_array(const std::vector<std::string>& values);
// The same for a bigint[] and a boolean[] parameter.
std::string number_array(const std::vector<std::int64_t>& values);
std::string bool_array(const std::vector<bool>& values);

// A statement's result, owned. Rows and columns are 0-based. Reading a column as a type it does
// not hold is a broken belief about the SQL (std::logic_error), not a data-dependent failure.
class Result {
public:
  explicit Result(PGresult* r) : r_(r) {}
  ~Result();
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result& operator=(Result&& o) noexcept;
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;

  int rows() const;
  int columns() const;
  bool is_null(int row, int col) const;
  // The value as text ("" for NULL).
  std::string text(int row, int col) const;
  std::optional<std::string> opt_text(int row, int col) const;
  std::int64_t integer(int row, int col) const;
  std::optional<std::int64_t> opt_integer(int row, int col) const;
  // Rows an INSERT, UPDATE or DELETE changed (0 for other statements).
  std::int64_t affected() const;
  // The command tag: "INSERT 0 1", "COMMIT", "ROLLBACK", ...
  std::string command() const;

private:
  PGresult* r_;
};

class Connection {
public:
  // The statement texts a connection keeps prepared, by default: several times the store's own
  // (about a hundred, each a fixed text); texts past it run unprepared.
  static constexpr std::size_t default_max_prepared = 512;

  // Connects to `url`, a libpq connection URI (or key=value string), with connect_timeout 10 s
  // and application_name payorchd unless the URI sets them. Throws Error (connection_lost)
  // naming the server by redacted_url(), never with the password. `max_prepared`: how many
  // statement texts exec() keeps prepared at most.
  explicit Connection(const std::string& url, std::size_t max_prepared = default_max_prepared);
  ~Connection();
  Connection(Connection&& o) noexcept;
  Connection& operator=(Connection&& o) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // One statement with $1, $2, ... placeholders. Throws Error. The first run of a text on this
  // connection prepares it (PQprepare, one more round trip), every run executes the prepared
  // statement (PQexecPrepared): the server parses and analyses each text once per session,
  // and may keep its plan. Once max_prepared texts are prepared, a new text runs unprepared
  // (PQexecParams), so texts that vary (built from data) cannot grow the cache without bound.
  // The prepared statements live in the server's session: a connection that breaks drops its
  // cache with it, and a new connection prepares anew.
  Result exec(std::string_view sql, std::initializer_list<Param> params = {});
  Result exec(std::string_view sql, const std::vector<Param>& params);
  // Queues `sql`, a statement whose result is not needed (a SAVEPOINT, an INSERT of an event or
  // a history row), to be sent in the same round trip as the next statement (libpq's pipeline
  // mode), ahead of it, in order. If it fails, the statements after it are not run and that
  // next statement throws its error instead: a caller that must know which statement failed
  // (to catch a unique violation, say) runs it with exec(). A text not prepared yet runs at
  // once (exec), so that it is prepared; a text with parameters that cannot be prepared (the
  // cache is full) runs at once too.
  void defer(std::string_view sql, std::initializer_list<Param> params = {});
  // Sends the deferred statements now, in one round trip; nothing when none are queued. The end
  // of a unit of work whose failures must be its own (a job of a batch) flushes; commit() does
  // too, before its COMMIT.
  void flush();
  // Several statements without parameters and without results, in one round trip: for SQL
  // compiled into the binary (migrations), never for text that holds a value. Never prepared.
  void exec_script(std::string_view sql);
  // COMMIT. Throws Error like exec(), except that a COMMIT the server did not answer (the
  // connection broke: connection_lost for any other statement) is commit_unknown: the server
  // may have committed before the connection broke. A COMMIT of a transaction that had
  // already failed (the server answers ROLLBACK) throws other.
  void commit();
  // Closes the connection (ok() is false from then on); a transaction still open is rolled
  // back by the server.
  void close();

  // Still connected, as far as libpq knows (it learns of a loss when it next talks).
  bool ok() const;
  // The server process serving this connection (pg_backend_pid()), 0 when closed.
  int backend_pid() const;
  // Inside a transaction block (BEGIN without COMMIT or ROLLBACK yet).
  bool in_transaction() const;
  // The server, without the password, for messages.
  const std::string& where() const { return where_; }
  PGconn* handle() const { return conn_; }

  // The statement texts prepared on this connection now (at most max_prepared).
  std::size_t prepared() const { return prepared_.size(); }
  // Statements this connection has prepared since it opened (a text whose prepared statement
  // the server invalidated is prepared again), and runs of a text that did not fit in the cache.
  std::uint64_t prepares() const { return prepares_; }
  std::uint64_t unprepared_runs() const { return unprepared_runs_; }
  // Statements sent (exec, exec_script, commit and each deferred one) and round trips to the
  // server (a statement alone, a pipeline of deferred statements and the one after them, a
  // PQprepare), since the connection opened.
  std::uint64_t statements() const { return statements_; }
  std::uint64_t round_trips() const { return round_trips_; }

private:
  Result run(std::string_view sql, const std::vector<const char*>& values);
  // Sends the deferred statements and then `sql` (prepared as `name`, or unprepared when null)
  // in one pipeline; `sql` empty: the deferred statements alone.
  Result run_pipelined(std::string_view sql, const std::string* name,
                       const std::vector<const char*>& values);
  // The name of the prepared statement for `sql`, preparing it first when new; nullptr when
  // the cache is full. Throws Error when the server refuses to prepare it.
  const std::string* statement_for(std::string_view sql);
  [[noreturn]] void fail(PGresult* r, std::string_view sql);

  PGconn* conn_ = nullptr;
  std::string where_;
  std::size_t max_prepared_ = default_max_prepared;
  std::unordered_map<std::string, std::string> prepared_;  // SQL text -> statement name
  std::uint64_t prepares_ = 0;  // also numbers the statements' names
  std::uint64_t unprepared_runs_ = 0;
  std::uint64_t statements_ = 0;
  std::uint64_t round_trips_ = 0;
  // A deferred statement: its text, its prepared name (empty: sent unprepared, which only a
  // statement without parameters is) and its parameters.
  struct Deferred {
    std::string sql;
    std::string name;
    std::vector<std::optional<std::string>> values;
  };
  std::vector<Deferred> deferred_;  // sent with the next statement
};

}  // namespace payorch::store::pg
