#include "vendor_sim/ledger_db.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "support/sqlite_probe.h"

namespace {

using namespace payorch::vendor_sim;

struct TempDb {
  TempDb() {
    std::string pattern = "/tmp/payorch-sim-db-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    dir = pattern;
    db.emplace(path());
    db->script("CREATE TABLE t (n INTEGER, s TEXT)");
  }
  ~TempDb() {
    db.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string path() const { return dir + "/t.db"; }
  std::int64_t rows() const { return payorch::test::SqliteProbe(path()).count("SELECT COUNT(*) FROM t"); }

  std::string dir;
  std::optional<LedgerDb> db;
};

}  // namespace

TEST_CASE("sim ledger db: WAL and synchronous=FULL, parameters in order, NULL for nullopt") {
  TempDb t;
  auto mode = t.db->query("PRAGMA journal_mode");
  REQUIRE(mode.next());
  CHECK(mode.text(0) == "wal");
  auto sync = t.db->query("PRAGMA synchronous");
  REQUIRE(sync.next());
  CHECK(sync.integer(0) == 2);  // FULL

  CHECK(t.db->run("INSERT INTO t VALUES (?1, ?2)", 7, std::string("seven")) == 1);
  CHECK(t.db->run("INSERT INTO t VALUES (?1, ?2)", std::optional<std::int64_t>{}, std::optional<std::string>{}) == 1);
  auto rows = t.db->query("SELECT n, s FROM t WHERE n = ?1 OR ?2 IS NULL ORDER BY n", std::int64_t{7}, "x");
  REQUIRE(rows.next());
  CHECK(rows.integer(0) == 7);
  CHECK(rows.maybe_text(1) == "seven");
  CHECK_FALSE(rows.next());
  auto nulls = t.db->query("SELECT s FROM t WHERE n IS NULL");
  REQUIRE(nulls.next());
  CHECK_FALSE(nulls.maybe_text(0));
  CHECK(nulls.text(0).empty());
  CHECK(t.db->run("UPDATE t SET s = 'x'") == 2);
}

TEST_CASE("sim ledger db: a transaction commits or, left unfinished, rolls back") {
  TempDb t;
  {
    LedgerDb::Transaction tx(*t.db);
    t.db->run("INSERT INTO t VALUES (1, 'a')");
  }
  CHECK(t.rows() == 0);
  {
    LedgerDb::Transaction tx(*t.db);
    t.db->run("INSERT INTO t VALUES (1, 'a')");
    tx.commit();
  }
  CHECK(t.rows() == 1);
}

TEST_CASE("sim ledger db: SQL errors and unopenable files throw LedgerError") {
  TempDb t;
  CHECK_THROWS_AS(t.db->query("SELECT nope FROM t"), LedgerError);
  CHECK_THROWS_AS(t.db->script("NOT SQL"), LedgerError);
  CHECK_THROWS_AS(LedgerDb("/nonexistent/dir/x.db"), LedgerError);
}
