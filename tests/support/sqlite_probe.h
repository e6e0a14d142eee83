#pragma once
// Looks into payorchd's SQLite file from the outside, to check rows the API does not show
// (outbox, conflict audit) and the file's integrity. Read-only unless opened for_writing (a
// test that deliberately damages the database, e.g. a future migration version).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace payorch::test {

// One result row: column name -> text value (nullopt for SQL NULL).
using SqlRow = std::map<std::string, std::optional<std::string>>;

class SqliteProbe {
public:
  // create: for_writing, creating the file if need be (":memory:": a private in-memory database).
  enum class Mode { read_only, for_writing, create };
  // Throws std::runtime_error if the file cannot be opened.
  explicit SqliteProbe(const std::string& path, Mode mode = Mode::read_only);
  ~SqliteProbe();
  SqliteProbe(const SqliteProbe&) = delete;
  SqliteProbe& operator=(const SqliteProbe&) = delete;

  // Runs one statement with `params` bound as text to ?1, ?2, ...; throws on any SQL error.
  std::vector<SqlRow> query(std::string_view sql, const std::vector<std::string>& params = {});
  // The first column of the single row `sql` returns, as an integer.
  std::int64_t count(std::string_view sql, const std::vector<std::string>& params = {});
  // Runs statements without results (for_writing only).
  void exec(const std::string& sql);
  // "ok", or the problems PRAGMA integrity_check lists (one per line).
  std::string integrity_check();

private:
  sqlite3* db_ = nullptr;
};

}  // namespace payorch::test
