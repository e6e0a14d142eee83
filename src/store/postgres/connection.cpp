#include "store/postgres/connection.h"

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/enum_names.h"
#include "util/log.h"

namespace payorch::store::pg {
namespace {

std::string field(const PGresult* r, int code) {
  const char* v = r != nullptr ? PQresultErrorField(r, code) : nullptr;
  return v != nullptr ? v : "";
}

// libpq's messages end with a newline; several lines when the server adds DETAIL or HINT.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text;
}

// The server's NOTICEs ("relation already exists, skipping") are expected and dropped; its
// WARNINGs are worth a log line. libpq would print both to stderr.
void on_notice(void*, const PGresult* r) {
  if (field(r, PG_DIAG_SEVERITY_NONLOCALIZED) != "WARNING") return;
  log::warn("postgres.warning", one_line(field(r, PG_DIAG_MESSAGE_PRIMARY)),
            {{"sqlstate", field(r, PG_DIAG_SQLSTATE)}});
}

constexpr EnumNames<ErrorKind, 6> error_kind_names{{
    {ErrorKind::serialization_failure, "serialization_failure"},
    {ErrorKind::deadlock, "deadlock"},
    {ErrorKind::unique_violation, "unique_violation"},
    {ErrorKind::connection_lost, "connection_lost"},
    {ErrorKind::commit_unknown, "commit_unknown"},
    {ErrorKind::other, "other"},
}};

// Where `url` holds a password, as written (percent-encoded or not): in the user info of a
// URI, and in a password= parameter of a URI's query or of a key=value string.
struct Span {
  std::size_t at;
  std::size_t size;
};
std::vector<Span> passwords_in(std::string_view url) {
  std::vector<Span> out;
  const std::size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) {
    const std::size_t start = scheme + 3;
    const std::string_view authority = url.substr(start, url.find_first_of("/?#", start) - start);
    const std::size_t at = authority.rfind('@');
    const std::size_t colon = authority.substr(0, at == std::string_view::npos ? 0 : at).find(':');
    if (at != std::string_view::npos && colon != std::string_view::npos)
      out.push_back({start + colon + 1, at - colon - 1});
  }
  for (std::size_t at = url.find("password"); at != std::string_view::npos;
       at = url.find("password", at + 1)) {
    std::size_t v = at + 8;
    while (v < url.size() && url[v] == ' ') ++v;
    if (v >= url.size() || url[v] != '=') continue;
    ++v;
    while (v < url.size() && url[v] == ' ') ++v;
    const bool quoted = v < url.size() && url[v] == '\'';
    if (quoted) ++v;
    std::size_t end =
        quoted ? url.find('\'', v) : url.find_first_of(scheme != std::string_view::npos ? "&#" : " ", v);
    if (end == std::string_view::npos) end = url.size();
    out.push_back({v, end - v});
  }
  return out;
}

// `text` (a message from libpq, which may quote the URI) with every password of `url` in it
// replaced by ****.
std::string without_passwords(std::string text, std::string_view url) {
  for (const Span& p : passwords_in(url)) {
    const std::string_view secret = url.substr(p.at, p.size);
    if (secret.empty()) continue;
    for (std::size_t at = text.find(secret); at != std::string::npos;
         at = text.find(secret, at + 4))
      text.replace(at, secret.size(), "****");
  }
  return text;
}

}  // namespace

std::string_view to_string(ErrorKind kind) { return name_of(error_kind_names, kind); }

ErrorKind classify(std::string_view sqlstate, bool connection_ok) {
  if (!connection_ok || sqlstate.empty() || sqlstate.starts_with("08") || sqlstate == "57P01" ||
      sqlstate == "57P02" || sqlstate == "57P03")
    return ErrorKind::connection_lost;
  if (sqlstate == "40001") return ErrorKind::serialization_failure;
  if (sqlstate == "40P01") return ErrorKind::deadlock;
  if (sqlstate == "23505") return ErrorKind::unique_violation;
  return ErrorKind::other;
}

std::string redacted_url(std::string_view url) {
  std::vector<Span> spans = passwords_in(url);
  std::sort(spans.begin(), spans.end(), [](Span a, Span b) { return a.at > b.at; });
  std::string out(url);
  for (const Span& p : spans) out.replace(p.at, p.size, "****");
  return out;
}

// --- Result ---

Result::~Result() {
  if (r_ != nullptr) PQclear(r_);
}

Result& Result::operator=(Result&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}

int Result::rows() const { return PQntuples(r_); }
int Result::columns() const { return PQnfields(r_); }
bool Result::is_null(int row, int col) const { return PQgetisnull(r_, row, col) == 1; }

std::string Result::text(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col)));
}

std::optional<std::string> Result::opt_text(int row, int col) const {
  if (is_null(row, col)) return std::nullopt;
  return text(row, col);
}

std::int64_t Result::integer(int row, int col) const {
  if (row < 0 || row >= rows() || col < 0 || col >= columns())
    throw std::logic_error("pg::Result: no row " + std::to_string(row) + ", column " +
                           std::to_string(col));
  const char* v = PQgetvalue(r_, row, col);
  const char* end = v + PQgetlength(r_, row, col);
  std::int64_t out = 0;
  const auto [stop, ec] = std::from_chars(v, end, out);
  if (is_null(row, col) || ec != std::errc() || stop != end)
    throw std::logic_error("pg::Result: column " + std::string(PQfname(r_, col)) +
                           " is not an integer: \"" + std::string(v, end) + "\"");
  return out;
}

std::optional<std::int64_t> Result::opt_integer(int row, int col) const {
  if (is_null(row, col)) return std::nullopt;
  return integer(row, col);
}

std::int64_t Result::affected() const {
  const char* n = PQcmdTuples(r_);
  std::int64_t out = 0;
  std::from_chars(n, n + std::strlen(n), out);
  return out;
}

std::string Result::command() const { return PQcmdStatus(r_); }

// --- Connection ---

Connection::Connection(const std::string& url, std::size_t max_prepared)
    : where_(redacted_url(url)), max_prepared_(max_prepared) {
  // Defaults the URI may override (libpq: values of the expanded dbname override the keywords
  // before it): a server that does not answer fails the connect after 10 s instead of never,
  // and the sessions show up as payorchd in pg_stat_activity.
  const char* keywords[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"10", "payorchd", url.c_str(), nullptr};
  conn_ = PQconnectdbParams(keywords, values, 1);
  if (conn_ == nullptr) throw Error(ErrorKind::connection_lost, "", "", "out of memory for libpq");
  if (PQstatus(conn_) != CONNECTION_OK) {
    const std::string message = without_passwords(one_line(PQerrorMessage(conn_)), url);
    PQfinish(conn_);
    conn_ = nullptr;
    throw Error(ErrorKind::connection_lost, "", "",
                "cannot connect to PostgreSQL at " + where_ + ": " + message);
  }
  PQsetNoticeReceiver(conn_, on_notice, nullptr);
}

Connection::~Connection() {
  if (conn_ != nullptr) PQfinish(conn_);
}

Connection::Connection(Connection&& o) noexcept
    : conn_(o.conn_),
      where_(std::move(o.where_)),
      max_prepared_(o.max_prepared_),
      prepared_(std::move(o.prepared_)),
      prepares_(o.prepares_),
      unprepared_runs_(o.unprepared_runs_),
      statements_(o.statements_),
      round_trips_(o.round_trips_),
      deferred_(std::move(o.deferred_)) {
  o.conn_ = nullptr;
  o.prepared_.clear();
}

Connection& Connection::operator=(Connection&& o) noexcept {
  if (this != &o) {
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = o.conn_;
    where_ = std::move(o.where_);
    max_prepared_ = o.max_prepared_;
    prepared_ = std::move(o.prepared_);
    prepares_ = o.prepares_;
    unprepared_runs_ = o.unprepared_runs_;
    statements_ = o.statements_;
    round_trips_ = o.round_trips_;
    deferred_ = std::move(o.deferred_);
    o.conn_ = nullptr;
    o.prepared_.clear();
  }
  return *this;
}

void Connection::close() {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
  prepared_.clear();
  deferred_.clear();
}

bool Connection::ok() const { return conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK; }

int Connection::backend_pid() const { return conn_ != nullptr ? PQbackendPID(conn_) : 0; }

bool Connection::in_transaction() const {
  if (conn_ == nullptr) return false;
  const PGTransactionStatusType s = PQtransactionStatus(conn_);
  return s == PQTRANS_INTRANS || s == PQTRANS_INERROR || s == PQTRANS_ACTIVE;
}

void Connection::fail(PGresult* r, std::string_view sql) {
  const std::string sqlstate = field(r, PG_DIAG_SQLSTATE);
  const std::string constraint = field(r, PG_DIAG_CONSTRAINT_NAME);
  // The primary message only: the server's DETAIL may quote the row (a CHECK names every
  // value of the failing row, payment source tokens included), which no log may hold.
  std::string message = one_line(field(r, PG_DIAG_MESSAGE_PRIMARY));
  if (message.empty()) message = one_line(conn_ != nullptr ? PQerrorMessage(conn_) : "no connection");
  if (r != nullptr) PQclear(r);
  // The session's prepared statements went with a lost connection.
  if (!ok()) prepared_.clear();
  const ErrorKind kind = classify(sqlstate, ok());
  std::string statement(sql.substr(0, 60));
  if (sql.size() > 60) statement += "...";
  throw Error(kind, sqlstate, constraint,
              message + " [" + std::string(to_string(kind)) +
                  (sqlstate.empty() ? "" : " " + sqlstate) + "] in: " + statement);
}

const std::string* Connection::statement_for(std::string_view sql) {
  std::string text(sql);
  if (const auto at = prepared_.find(text); at != prepared_.end()) return &at->second;
  if (prepared_.size() >= max_prepared_) return nullptr;
  std::string name = "payorch_" + std::to_string(prepares_ + 1);
  // No parameter types: the server infers them from the text, as it does for PQexecParams.
  ++round_trips_;
  PGresult* r = PQprepare(conn_, name.c_str(), text.c_str(), 0, nullptr);
  if (r == nullptr || PQresultStatus(r) != PGRES_COMMAND_OK) fail(r, sql);
  PQclear(r);
  ++prepares_;
  return &prepared_.emplace(std::move(text), std::move(name)).first->second;
}

void Connection::defer(std::string_view sql, std::initializer_list<Param> params) {
  if (conn_ == nullptr) throw Error(ErrorKind::connection_lost, "", "", "connection closed");
  Deferred d{std::string(sql), {}, {}};
  if (params.size() > 0) {
    const auto prepared = prepared_.find(d.sql);
    if (prepared == prepared_.end()) {
      exec(sql, params);
      return;
    }
    d.name = prepared->second;
    d.values.reserve(params.size());
    for (const Param& p : params) {
      const char* v = p.c_str();
      d.values.push_back(v ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  deferred_.push_back(std::move(d));
}

void Connection::flush() {
  if (deferred_.empty()) return;
  if (conn_ == nullptr) throw Error(ErrorKind::connection_lost, "", "", "connection closed");
  run_pipelined("", nullptr, {});
}

Result Connection::run_pipelined(std::string_view sql, const std::string* name,
                                 const std::vector<const char*>& values) {
  std::vector<Deferred> before;
  before.swap(deferred_);
  statements_ += before.size() + (sql.empty() ? 0 : 1);
  ++round_trips_;
  // Anything unexpected from libpq here leaves the protocol state unknown: the connection is
  // closed (its transaction rolled back by the server) and the failure is a lost connection.
  const auto lost = [&](const std::string& what) -> Error {
    const std::string message = one_line(PQerrorMessage(conn_));
    close();
    return Error(ErrorKind::connection_lost, "", "", what + ": " + message);
  };
  if (PQenterPipelineMode(conn_) != 1) throw lost("cannot enter pipeline mode");
  const std::string text(sql);
  // One statement into the pipeline: prepared as `prepared`, or unprepared when null.
  const auto send = [&](const std::string& statement, const std::string* prepared,
                        const std::vector<const char*>& params) {
    const int n = static_cast<int>(params.size());
    return (prepared ? PQsendQueryPrepared(conn_, prepared->c_str(), n, params.data(), nullptr, nullptr, 0)
                     : PQsendQueryParams(conn_, statement.c_str(), n, nullptr, params.data(), nullptr, nullptr, 0)) == 1;
  };
  bool sent = true;
  for (const auto& d : before) {
    std::vector<const char*> params;
    params.reserve(d.values.size());
    for (const auto& v : d.values) params.push_back(v ? v->c_str() : nullptr);
    sent = sent && send(d.sql, d.name.empty() ? nullptr : &d.name, params);
  }
  if (!sql.empty()) sent = sent && send(text, name, values);
  if (!sent || PQpipelineSync(conn_) != 1) throw lost("cannot send a pipeline");
  // One result (and its terminating null) per statement, then the sync. The first failure is
  // kept; the statements after it come back aborted.
  PGresult* failed = nullptr;
  std::string failed_sql;
  PGresult* main = nullptr;
  const std::size_t count = before.size() + (sql.empty() ? 0 : 1);
  for (std::size_t i = 0; i < count; ++i) {
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) {
      if (failed) PQclear(failed);
      if (main) PQclear(main);
      throw lost("the server's answers to a pipeline ended early");
    }
    while (PGresult* extra = PQgetResult(conn_)) PQclear(extra);  // up to the null after it
    const ExecStatusType s = PQresultStatus(r);
    const bool is_main = i == before.size();
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
      if (is_main) main = r;
      else PQclear(r);
    } else if (s == PGRES_PIPELINE_ABORTED || failed) {
      PQclear(r);
    } else {
      failed = r;
      failed_sql = is_main ? text : before[i].sql;
    }
  }
  PGresult* sync = PQgetResult(conn_);
  const bool synced = sync != nullptr && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  if (sync) PQclear(sync);
  if (!synced || PQexitPipelineMode(conn_) != 1) {
    if (failed) PQclear(failed);
    if (main) PQclear(main);
    throw lost("a pipeline did not end as expected");
  }
  if (failed) {
    if (main) PQclear(main);
    if (field(failed, PG_DIAG_SQLSTATE) == "0A000") prepared_.erase(failed_sql);
    fail(failed, failed_sql);
  }
  return Result(main);
}

Result Connection::run(std::string_view sql, const std::vector<const char*>& values) {
  if (conn_ == nullptr) throw Error(ErrorKind::connection_lost, "", "", "connection closed");
  if (!deferred_.empty()) {
    // A statement not prepared yet is prepared first, in a round trip of its own (once per text
    // and session); a failure there must not leave the deferred statements unsent.
    const auto prepared = prepared_.find(std::string(sql));
    if (prepared == prepared_.end()) flush();
    else return run_pipelined(sql, &prepared->second, values);
  }
  const int n = static_cast<int>(values.size());
  PGresult* r = nullptr;
  ++statements_;
  ++round_trips_;
  if (const std::string* name = statement_for(sql)) {
    r = PQexecPrepared(conn_, name->c_str(), n, values.data(), nullptr, nullptr, 0);
  } else {
    ++unprepared_runs_;
    const std::string text(sql);
    r = PQexecParams(conn_, text.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0);
  }
  const ExecStatusType s = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
    // "cached plan must not change result type": a table the statement reads changed its
    // columns since it was prepared (a migration on another connection). This run fails; the
    // next one prepares the text afresh under a new name.
    if (field(r, PG_DIAG_SQLSTATE) == "0A000") prepared_.erase(std::string(sql));
    fail(r, sql);
  }
  return Result(r);
}

namespace {

// `values` as an array literal, each element written by `write(out, value)`.
template <class T, class Write>
std::string array_literal(const std::vector<T>& values, Write write) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    write(out, values[i]);
  }
  out += '}';
  return out;
}

}  // namespace

std::string text_array(const std::vector<std::string>& values) {
  return array_literal(values, [](std::string& out, const std::string& v) {
    out += '"';
    for (const char c : v) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  });
}

std::string number_array(const std::vector<std::int64_t>& values) {
  return array_literal(values, [](std::string& out, std::int64_t v) { out += std::to_string(v); });
}

std::string bool_array(const std::vector<bool>& values) {
  return array_literal(values, [](std::string& out, bool v) { out += v ? 't' : 'f'; });
}

Result Connection::exec(std::string_view sql, std::initializer_list<Param> params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) values.push_back(p.c_str());
  return run(sql, values);
}

Result Connection::exec(std::string_view sql, const std::vector<Param>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) values.push_back(p.c_str());
  return run(sql, values);
}

void Connection::exec_script(std::string_view sql) {
  if (conn_ == nullptr) throw Error(ErrorKind::connection_lost, "", "", "connection closed");
  flush();
  const std::string text(sql);
  ++statements_;
  ++round_trips_;
  PGresult* r = PQexec(conn_, text.c_str());
  const ExecStatusType s = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) fail(r, sql);
  PQclear(r);
}

void Connection::commit() {
  Result r = [&] {
    // The deferred statements first, in a round trip of their own: a COMMIT is the only
    // statement whose lost answer means "unknown", and a failure of theirs is a plain one.
    flush();
    try {
      return exec("COMMIT");
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::connection_lost) throw;
      throw Error(ErrorKind::commit_unknown, e.sqlstate(), e.constraint(),
                  std::string("the connection was lost during COMMIT: the transaction may or "
                              "may not have committed (") +
                      e.what() + ")");
    }
  }();
  // A transaction that had failed is rolled back by its COMMIT, which then succeeds.
  if (r.command() == "ROLLBACK")
    throw Error(ErrorKind::other, "25P02", "",
                "COMMIT rolled back a transaction that had already failed");
}

}  // namespace payorch::store::pg
