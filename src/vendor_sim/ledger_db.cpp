#include "vendor_sim/ledger_db.h"

namespace payorch::vendor_sim {
namespace {

constexpr int busy_timeout_ms = 5'000;

}  // namespace

Rows::Rows(sqlite3* db, std::string_view sql) : db_(db) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  stmt_.reset(raw);
  check(rc);
}

void Rows::check(int rc) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  throw LedgerError(std::string("ledger: ") + sqlite3_errmsg(db_));
}

bool Rows::next() {
  const int rc = sqlite3_step(stmt_.get());
  check(rc);
  return rc == SQLITE_ROW;
}

std::string Rows::text(int col) const {
  const auto* p = sqlite3_column_text(stmt_.get(), col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), col)))
           : std::string();
}

std::optional<std::string> Rows::maybe_text(int col) const {
  if (sqlite3_column_type(stmt_.get(), col) == SQLITE_NULL) return std::nullopt;
  return text(col);
}

void Rows::bind_at(int i, std::int64_t v) { check(sqlite3_bind_int64(stmt_.get(), i, v)); }

void Rows::bind_at(int i, std::string_view v) {
  check(sqlite3_bind_text(stmt_.get(), i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
}

void Rows::bind_at(int i, std::nullopt_t) { check(sqlite3_bind_null(stmt_.get(), i)); }

LedgerDb::LedgerDb(const std::string& path) : path_(path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  db_.reset(raw);  // closed by the destructor, or here when the constructor throws
  if (rc != SQLITE_OK)
    throw LedgerError("ledger " + path + ": cannot open: " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  script("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
}

void LedgerDb::script(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, &error) == SQLITE_OK) return;
  const std::string why = error ? error : sqlite3_errmsg(db_.get());
  sqlite3_free(error);
  throw LedgerError("ledger " + path_ + ": " + why);
}

LedgerDb::Transaction::Transaction(LedgerDb& db) : db_(db) { db_.script("BEGIN IMMEDIATE"); }

LedgerDb::Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_.db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void LedgerDb::Transaction::commit() {
  db_.script("COMMIT");
  open_ = false;
}

}  // namespace payorch::vendor_sim
