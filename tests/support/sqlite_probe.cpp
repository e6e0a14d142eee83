#include "support/sqlite_probe.h"

#include <sqlite3.h>

#include <stdexcept>

namespace payorch::test {
namespace {

class Statement {
public:
  Statement(sqlite3* db, std::string_view sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
        SQLITE_OK)
      fail(sql);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  sqlite3_stmt* get() const { return stmt_; }
  [[noreturn]] void fail(std::string_view sql) const {
    throw std::runtime_error("sqlite: " + std::string(sqlite3_errmsg(db_)) +
                             " in: " + std::string(sql));
  }

private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace

SqliteProbe::SqliteProbe(const std::string& path, Mode mode) {
  const int flags = mode == Mode::read_only  ? SQLITE_OPEN_READONLY
                    : mode == Mode::create   ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                                             : SQLITE_OPEN_READWRITE;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("sqlite: cannot open " + path + ": " + message);
  }
  // The daemon may be writing while we read.
  sqlite3_busy_timeout(db_, 5000);
}

SqliteProbe::~SqliteProbe() { sqlite3_close(db_); }

std::vector<SqlRow> SqliteProbe::query(std::string_view sql,
                                       const std::vector<std::string>& params) {
  Statement stmt(db_, sql);
  for (std::size_t i = 0; i < params.size(); ++i)
    if (sqlite3_bind_text(stmt.get(), static_cast<int>(i + 1), params[i].c_str(),
                          static_cast<int>(params[i].size()), SQLITE_TRANSIENT) != SQLITE_OK)
      stmt.fail(sql);
  std::vector<SqlRow> rows;
  for (;;) {
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) stmt.fail(sql);
    SqlRow row;
    for (int c = 0; c < sqlite3_column_count(stmt.get()); ++c) {
      std::optional<std::string> value;
      if (sqlite3_column_type(stmt.get(), c) != SQLITE_NULL) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), c));
        value.emplace(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt.get(), c)));
      }
      row[sqlite3_column_name(stmt.get(), c)] = std::move(value);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::int64_t SqliteProbe::count(std::string_view sql, const std::vector<std::string>& params) {
  Statement stmt(db_, sql);
  for (std::size_t i = 0; i < params.size(); ++i)
    sqlite3_bind_text(stmt.get(), static_cast<int>(i + 1), params[i].c_str(),
                      static_cast<int>(params[i].size()), SQLITE_TRANSIENT);
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) stmt.fail(sql);
  return sqlite3_column_int64(stmt.get(), 0);
}

void SqliteProbe::exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    throw std::runtime_error("sqlite: " + message + " in: " + sql);
  }
}

std::string SqliteProbe::integrity_check() {
  std::string out;
  for (const SqlRow& row : query("PRAGMA integrity_check")) {
    if (!out.empty()) out += "\n";
    out += row.begin()->second.value_or("NULL");
  }
  return out;
}

}  // namespace payorch::test
