#pragma once
// payorchd's database seen from outside, on whichever driver the daemon under test runs
// (support/daemon.h, PAYORCH_TEST_DRIVER): the SQLite file through SqliteProbe, or the
// PostgreSQL database through PostgresProbe. Checks are written once, in SQLite's placeholder
// style (`?` or `?N`); on PostgreSQL they are sent as `$N`. The two schemas keep the same
// tables and columns (schema/ and schema/postgres/), so a check reads both the same way.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/postgres_probe.h"
#include "support/sqlite_probe.h"

namespace payorch::test {

class Daemon;

class DatabaseProbe {
public:
  // The database of `daemon`, on its driver.
  explicit DatabaseProbe(const Daemon& daemon, SqliteProbe::Mode mode = SqliteProbe::Mode::read_only);
  // A SQLite file by path (tools that only ever run on SQLite, e.g. the chaos run's records).
  explicit DatabaseProbe(const std::string& sqlite_path,
                         SqliteProbe::Mode mode = SqliteProbe::Mode::read_only);

  std::vector<SqlRow> query(std::string_view sql, const std::vector<std::string>& params = {});
  // The first column of the single row `sql` returns, as an integer.
  std::int64_t count(std::string_view sql, const std::vector<std::string>& params = {});
  // Statements without parameters and results (a damage a test plants).
  void exec(const std::string& sql);
  // "ok" when the database is sound, else the problems found. SQLite: PRAGMA integrity_check.
  // PostgreSQL: amcheck's bt_index_check over every B-tree index of payorch's tables (the
  // server checks constraints itself; a damaged index is what a crash could leave unseen).
  std::string integrity_check();
  bool postgres() const { return pg_.has_value(); }

private:
  std::optional<SqliteProbe> sqlite_;
  std::optional<PostgresProbe> pg_;
};

// `sql` with SQLite's placeholders (`?` numbered in order, `?N` as given) written as
// PostgreSQL's `$N`; text inside single-quoted literals is left alone.
std::string postgres_placeholders(std::string_view sql);

}  // namespace payorch::test
