#pragma once
// A throwaway PostgreSQL cluster for tests: tools/pg-cluster (initdb in a temp dir, 127.0.0.1
// on a free port, durability off) started once per test binary, and a fresh database per test
// case made from it (CREATE DATABASE, a few milliseconds). The cluster stops when the binary
// exits, however it exits: the script's watcher stops it after a crash or a kill.
//
// Where PostgreSQL cannot start, a test that needs it fails when CI is set (CI installs
// postgresql-15, as tools/deps does) and is skipped otherwise, printing postgres_skip_marker
// and the reason; tests/CMakeLists.txt hands the marker to ctest, which then reports the test
// binary as skipped rather than passed.
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "store/postgres/connection.h"

namespace payorch::test {

inline constexpr const char* postgres_skip_marker = "PostgreSQL tests skipped";

class PostgresCluster {
public:
  // Runs `tools/pg-cluster start` in mkdtemp("/tmp/payorch-pg-XXXXXX"), watched by this
  // process. Registers the cluster's password with log_audit, so that a log holding it fails
  // the run. Throws std::runtime_error with the script's reason when it does not start.
  PostgresCluster();
  // Stops the cluster and removes its folder (unless PAYORCH_KEEP_TEST_DIRS is set).
  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // The connection URI of `database` (tools/pg-cluster url), with the superuser's password.
  std::string url(const std::string& database = "payorch") const;
  const std::string& dir() const { return dir_; }

  // Stops the server (fast: sessions are cut and their transactions rolled back), as a
  // database that goes down; start_server() brings it back on the same port, so that clients
  // reconnect to the same URI: together, a restart.
  void stop_server();
  void start_server();

  // A new, empty database (CREATE DATABASE test_<n>); returns its name. Thread-safe.
  std::string create_database();
  // DROP DATABASE ... WITH (FORCE): its sessions are ended first.
  void drop_database(const std::string& name);
  // Runs one statement as the superuser in the database postgres (pg_terminate_backend, ...).
  store::pg::Result admin(const std::string& sql, std::initializer_list<store::pg::Param> params = {});

private:
  std::string dir_;
  std::string base_url_;  // of the database payorch
  std::mutex mu_;
  std::optional<store::pg::Connection> admin_;
  int databases_ = 0;
};

// The cluster of this test binary, started at the first call. When it cannot start: with CI set
// the calling test case FAILs; otherwise nullptr, and `why` says what went wrong. Only from
// inside a test case.
PostgresCluster* shared_postgres(std::string* why = nullptr);

// A fresh, empty database on the shared cluster for one test case, dropped at the end.
class PostgresDatabase {
public:
  explicit PostgresDatabase(PostgresCluster& cluster);
  ~PostgresDatabase();
  PostgresDatabase(const PostgresDatabase&) = delete;
  PostgresDatabase& operator=(const PostgresDatabase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& url() const { return url_; }
  PostgresCluster& cluster() const { return cluster_; }

private:
  PostgresCluster& cluster_;
  std::string name_;
  std::string url_;
};

// The test case's own database, or nullptr after printing postgres_skip_marker and the reason
// when PostgreSQL is unavailable outside CI (with CI set, the test case FAILs instead):
//   auto db = test::postgres_database_or_skip();
//   if (!db) return;
std::unique_ptr<PostgresDatabase> postgres_database_or_skip();

}  // namespace payorch::test
