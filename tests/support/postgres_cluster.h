#pragma once
// A throwaway PostgreSQL cluster for tests: tools/pg-cluster (initdb in a temp dir, 127.0.0.1
// on a free port, durability off) started once per test binary, and a fresh database per test
// case made from it (CREATE DATABASE, a few milliseconds). A test of a failover starts a
// primary and a synchronous standby of its own instead (replicated_postgres_or_skip). Every
// cluster stops when the binary exits, however it exits: the script's watcher stops it and
// removes its folder after a crash or a kill.
//
// Where PostgreSQL cannot start, a test that needs it fails when CI is set (CI installs
// postgresql-15, as tools/deps does) and is skipped otherwise, printing postgres_skip_marker
// and the reason; tests/CMakeLists.txt hands the marker to ctest, which then reports the test
// binary as skipped rather than passed.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "store/postgres/connection.h"

namespace payorch::test {

inline constexpr const char* postgres_skip_marker = "PostgreSQL tests skipped";

class PostgresCluster {
public:
  // Runs `tools/pg-cluster start` in mkdtemp("/tmp/payorch-pg-XXXXXX"), watched by this
  // process. Registers the cluster's password with log_audit, so that a log holding it fails
  // the run. Throws std::runtime_error with the script's reason when it does not start.
  PostgresCluster();
  // A synchronous standby of `primary` (`tools/pg-cluster standby`): a base backup of it in a
  // temp dir of its own, streaming from it, with the same password; returns once `primary`
  // waits for it at every commit (pg_stat_replication.sync_state = 'sync'). Watched and
  // removed like any cluster. Throws std::runtime_error when it does not start.
  static std::unique_ptr<PostgresCluster> standby_of(const PostgresCluster& primary);
  // Stops the cluster and removes its folder (unless PAYORCH_KEEP_TEST_DIRS is set).
  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // The connection URI of `database` (tools/pg-cluster url), with the superuser's password.
  std::string url(const std::string& database = "payorch") const;
  // "127.0.0.1:PORT", the server's host and port in a URI.
  std::string host_port() const;
  const std::string& dir() const { return dir_; }

  // Stops the server (fast: sessions are cut and their transactions rolled back), as a
  // database that goes down; start_server() brings it back on the same port, so that clients
  // reconnect to the same URI: together, a restart.
  void stop_server();
  void start_server();
  // kill -9 of the server's postmaster (its pid from postmaster.pid), as when its machine dies:
  // nothing is shut down cleanly, and its sessions end as the backends notice. Returns once
  // the postmaster has exited (a zombie until reaped: it holds no socket any more).
  void kill_server();
  // Promotes this standby (`tools/pg-cluster promote`): returns once it takes writes. Its old
  // primary's folder is fenced from then on: start_server() on it throws instead of making a
  // second primary.
  void promote();

  // A new, empty database (CREATE DATABASE test_<n>); returns its name. Thread-safe.
  std::string create_database();
  // DROP DATABASE ... WITH (FORCE): its sessions are ended first.
  void drop_database(const std::string& name);
  // Runs one statement as the superuser in the database postgres (pg_terminate_backend, ...).
  store::pg::Result admin(const std::string& sql, std::initializer_list<store::pg::Param> params = {});

private:
  // Runs `tools/pg-cluster <command> <a new temp dir> <args...> --watch <this process>`.
  PostgresCluster(const std::string& command, const std::vector<std::string>& args);

  std::string dir_;
  std::string base_url_;  // of the database payorch
  std::mutex mu_;
  std::optional<store::pg::Connection> admin_;
  int databases_ = 0;
};

// CI=true (any value but empty, 0 or false): what CI installs (PostgreSQL, faketime) must be
// there, and a test that finds it missing fails rather than skips.
bool in_ci();

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

// A primary and its synchronous standby, both of this test case alone (a failover ends the
// primary's life).
struct ReplicatedPostgres {
  std::unique_ptr<PostgresCluster> primary;
  std::unique_ptr<PostgresCluster> standby;
};

// Starts a primary and its synchronous standby, or returns nullopt after printing
// postgres_skip_marker and the reason when PostgreSQL is unavailable outside CI (with CI set,
// the test case FAILs instead), as postgres_database_or_skip does.
std::optional<ReplicatedPostgres> replicated_postgres_or_skip();

// One libpq multi-host URI of `database` on `servers`, in that order, with `options` as its
// query ("target_session_attrs=read-write"): postgresql://payorch:…@H1:P1,H2:P2/db?options.
// The servers share the password (a standby's is its primary's).
std::string multi_host_url(const std::vector<const PostgresCluster*>& servers,
                           const std::string& database, const std::string& options);

// The test case's own database, or nullptr after printing postgres_skip_marker and the reason
// when PostgreSQL is unavailable outside CI (with CI set, the test case FAILs instead):
//   auto db = test::postgres_database_or_skip();
//   if (!db) return;
std::unique_ptr<PostgresDatabase> postgres_database_or_skip();

}  // namespace payorch::test
