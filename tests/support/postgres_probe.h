#pragma once
// Looks into payorchd's PostgreSQL database from the outside, as support/sqlite_probe.h does
// into its SQLite file: rows as SqlRow (column name -> text value, nullopt for NULL), so that a
// check written against SqliteProbe's rows reads PostgreSQL's the same way.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/postgres/connection.h"
#include "support/sqlite_probe.h"

namespace payorch::test {

class PostgresProbe {
public:
  // Connects to `url` (a libpq URI). Throws store::pg::Error when it cannot.
  explicit PostgresProbe(const std::string& url);

  // Runs one statement with `params` sent as text to $1, $2, ...; throws std::runtime_error on
  // any SQL error, with the server's message and the statement.
  std::vector<SqlRow> query(std::string_view sql, const std::vector<std::string>& params = {});
  // The one value of the one row `sql` returns (a single column), as an integer.
  std::int64_t count(std::string_view sql, const std::vector<std::string>& params = {});
  // Statements without parameters and results (BEGIN, SET, a damage a test plants).
  void exec(const std::string& sql);

private:
  store::pg::Connection conn_;
};

}  // namespace payorch::test
