#include "store/sqlite.h"

#include "util/log.h"

namespace payorch::store {

std::string_view storage_error_kind(int code) {
  switch (code & 0xff) {
    case SQLITE_FULL: return "full";
    case SQLITE_IOERR: return "io";
    case SQLITE_READONLY: return "readonly";
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return "busy";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return "corrupt";
    case SQLITE_CANTOPEN: return "cantopen";
    case SQLITE_NOMEM: return "nomem";
    default: return "";
  }
}

const std::vector<std::string_view>& storage_error_kinds() {
  static const std::vector<std::string_view> kinds{"full",    "io",       "readonly", "busy",
                                                   "corrupt", "cantopen", "nomem",    "other"};
  return kinds;
}

Db::Db(const std::string& path, Mode mode) : path_(path) {
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  switch (mode) {
    case Mode::read_write_create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
    case Mode::read_write: flags |= SQLITE_OPEN_READWRITE; break;
    case Mode::read_only: flags |= SQLITE_OPEN_READONLY; break;
  }
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError(rc, "open " + path + ": " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() {
  for (auto& [sql, stmts] : idle_)
    for (sqlite3_stmt* st : stmts) sqlite3_finalize(st);
  if (db_) sqlite3_close_v2(db_);
}

sqlite3_stmt* Db::acquire(std::string_view sql) {
  if (auto it = idle_.find(std::string(sql)); it != idle_.end() && !it->second.empty()) {
    sqlite3_stmt* st = it->second.back();
    it->second.pop_back();
    return st;
  }
  sqlite3_stmt* st = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &st, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(st);
    fail(rc, "prepare");
  }
  return st;
}

void Db::release(sqlite3_stmt* st) {
  // reset() reports the last step's error again; it was already thrown to the caller.
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  const char* sql = sqlite3_sql(st);
  auto& idle = idle_[sql ? sql : ""];
  if (!sql || idle.size() >= 4) {
    sqlite3_finalize(st);
    return;
  }
  idle.push_back(st);
}

void Db::fail(int rc, std::string_view context) const {
  throw SqliteError(rc, std::string(context) + ": " + sqlite3_errmsg(db_));
}

void Db::exec(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqliteError(sqlite3_extended_errcode(db_), msg);
  }
}

Stmt Db::prepare(std::string_view sql) { return Stmt(*this, sql); }

void Db::after_commit(std::function<void()> action) {
  after_commit_.push_back(std::move(action));
  if (sqlite3_get_autocommit(db_)) run_after_commit();  // no transaction: already committed
}

void Db::discard_after_commit(std::size_t mark) {
  if (mark < after_commit_.size()) after_commit_.resize(mark);
}

void Db::run_after_commit() {
  auto actions = std::move(after_commit_);
  after_commit_.clear();
  // The transaction is durable whatever an action does: a failing one must not turn a commit
  // into an error answer.
  for (auto& action : actions) {
    try {
      action();
    } catch (const std::exception& e) {
      log::error("store.after_commit_failed", e.what());
    }
  }
}

Stmt::Stmt(Db& db, std::string_view sql) : db_(&db), stmt_(db.acquire(sql)) {}

Stmt::~Stmt() {
  if (stmt_) db_->release(stmt_);
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  int rc = sqlite3_bind_int64(stmt_, i, v);
  if (rc != SQLITE_OK) db_->fail(rc, "bind");
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  int rc = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_->fail(rc, "bind");
  return *this;
}

Stmt& Stmt::bind_null(int i) {
  int rc = sqlite3_bind_null(stmt_, i);
  if (rc != SQLITE_OK) db_->fail(rc, "bind");
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // sqlite3_step returns the extended code when extended codes are on.
  std::string msg = sqlite3_errmsg(db_->handle());
  sqlite3_reset(stmt_);
  throw SqliteError(rc, msg);
}

void Stmt::run() {
  while (step()) {
  }
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Stmt::col_text(int i) const {
  const unsigned char* t = sqlite3_column_text(stmt_, i);
  if (!t) return {};
  return std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)));
}

std::optional<std::string> Stmt::col_opt_text(int i) const {
  if (col_null(i)) return std::nullopt;
  return col_text(i);
}

std::optional<std::int64_t> Stmt::col_opt_int(int i) const {
  if (col_null(i)) return std::nullopt;
  return col_int(i);
}

Transaction::Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (const SqliteError&) {
      // Already rolled back by SQLite (e.g. after SQLITE_FULL); nothing to undo.
    }
    db_.discard_after_commit(0);
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
  db_.run_after_commit();
}

void configure_connection(Db& db, int busy_timeout_ms) {
  sqlite3_busy_timeout(db.handle(), busy_timeout_ms);
  db.exec("PRAGMA journal_mode=WAL");
  // FULL: a COMMIT returns only after the WAL is fsync'ed, so a 201 survives power loss.
  db.exec("PRAGMA synchronous=FULL");
  db.exec("PRAGMA foreign_keys=ON");
}

}  // namespace payorch::store
