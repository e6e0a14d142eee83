#pragma once
// The ledger's SQLite connection: exactly the calls Ledger makes. Parameters are bound in
// order to ?1, ?2, … (an integer, text, or an optional of either, nullopt being NULL). Every
// failure throws LedgerError with SQLite's message. One thread owns a LedgerDb.
#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace payorch::vendor_sim {

class LedgerError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The rows of one statement, read with next() and the column getters (0-based).
class Rows {
public:
  bool next();
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_.get(), col); }
  std::string text(int col) const;
  std::optional<std::string> maybe_text(int col) const;

private:
  friend class LedgerDb;
  struct Finalize {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  Rows(sqlite3* db, std::string_view sql);
  void bind_at(int i, std::int64_t v);
  void bind_at(int i, std::string_view v);
  void bind_at(int i, std::nullopt_t);
  template <class T>
  void bind_at(int i, const std::optional<T>& v) {
    if (v) bind_at(i, *v);
    else bind_at(i, std::nullopt);
  }
  void check(int rc) const;

  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, Finalize> stmt_;
};

class LedgerDb {
public:
  // Opens or creates `path` with WAL, synchronous=FULL (a COMMIT is on disk before the sim
  // answers), foreign keys on, and a 5 s busy timeout (tests read the file meanwhile).
  explicit LedgerDb(const std::string& path);

  const std::string& path() const { return path_; }
  // Runs a script of statements that return no rows (the schema).
  void script(const char* sql);

  template <class... Args>
  Rows query(std::string_view sql, const Args&... args) {
    Rows rows(db_.get(), sql);
    int i = 0;
    (rows.bind_at(++i, bind_value(args)), ...);
    return rows;
  }
  // A statement without rows; returns how many rows it changed.
  template <class... Args>
  int run(std::string_view sql, const Args&... args) {
    query(sql, args...).next();
    return sqlite3_changes(db_.get());
  }

  // BEGIN IMMEDIATE; rolled back when destroyed before commit().
  class Transaction {
  public:
    explicit Transaction(LedgerDb& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

  private:
    LedgerDb& db_;
    bool open_ = true;
  };

private:
  static std::int64_t bind_value(std::int64_t v) { return v; }
  static std::int64_t bind_value(int v) { return v; }
  static std::string_view bind_value(std::string_view v) { return v; }
  static std::string_view bind_value(const std::string& v) { return v; }
  static std::string_view bind_value(const char* v) { return v; }
  template <class T>
  static const std::optional<T>& bind_value(const std::optional<T>& v) {
    return v;
  }

  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close(db); }
  };
  std::unique_ptr<sqlite3, Close> db_;
  std::string path_;
};

}  // namespace payorch::vendor_sim
