#pragma once
// Runs the real payorchd as a child process for integration tests: a fresh temp dir, a config
// written from YAML fragments, stderr captured to a log file, the port read back from
// --port-file (never a fixed port), and kill -9 / SIGTERM / restart on the same database.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/process.h"

namespace payorch::test {

// The database a Daemon with the default `database` section runs on: SQLite (a file in its temp
// dir), or with PAYORCH_TEST_DRIVER=postgres a fresh database of its own on the test binary's
// throwaway cluster (support/postgres_cluster.h). tests/CMakeLists.txt runs the integration
// suite once per driver; a test case that exercises one driver's mechanics (a SQLite file's
// lock, its commit mark, ...) is in the test suite "sqlite-only" and runs in the SQLite run.
enum class TestDriver { sqlite, postgres };
TestDriver test_driver();

class PostgresDatabase;

inline constexpr const char* admin_token = "admin-token-123";
inline constexpr const char* acme_token = "acme-token-123";
inline constexpr const char* globex_token = "globex-token-123";

// The config file, one top-level YAML section per member. "{dir}" is replaced with the
// daemon's temp dir. Override a member to change one section; `extra` is appended verbatim.
struct DaemonConfig {
  std::string server = R"(server: {listen: "127.0.0.1:0", max_body_bytes: 65536})";
  std::string database = R"(database: {driver: sqlite, path: "{dir}/payorch.db"})";
  std::string admin = R"(admin: {token: "admin-token-123"})";
  std::string tenants =
      "tenants:\n"
      "  - {id: acme, token: \"acme-token-123\"}\n"
      "  - {id: globex, token: \"globex-token-123\"}";
  // base_url points at the discard port: a vendor call is refused before anything is sent,
  // so payments stay PROCESSING for the whole test.
  std::string providers =
      "providers:\n"
      "  - name: sim\n"
      "    adapter: sim\n"
      "    base_url: \"http://127.0.0.1:9\"\n"
      "    api_key: \"sim-key-1234\"\n"
      "    timeouts: {connect: 1s, request: 5s}\n"
      "    contract: {key_retention: 24h, recovery: lookup, not_found_final_after: 30s}\n"
      "    retry: {max_attempts: 5, initial_backoff: 1s, max_backoff: 30s, give_up_after: 1h}\n"
      "    risk: {max_unknown_count: 100, max_unknown_amount_minor: 100000000}\n"
      "    callback: {secret: \"sim-callback-secret\", tolerance: 5m, retry_horizon: 24h}";
  std::string routing = "routing: {default_provider: sim}";
  std::string engine = "engine: {workers: 2, lease: 30s, poll_interval: 500ms}";
  std::string extra;

  // The YAML text with "{dir}" replaced.
  std::string render(const std::string& dir) const;
};
// DaemonConfig's default `database` section (a SQLite file in the daemon's dir).
std::string default_database_section();
// A `server` section with HTTPS on the listener, from tls/server.crt and tls/server.key in the
// daemon's dir (write_tls_files); `listen` is "HOST:PORT".
std::string tls_server_section(const std::string& listen = "127.0.0.1:0");
// Writes the certificate and key tls_server_section() names into the daemon dir `dir`.
void write_tls_files(const std::string& dir, const std::string& cert_pem, const std::string& key_pem);

class Daemon {
public:
  // Creates the temp dir (mkdtemp under /tmp) and writes the config. Does not start. With
  // test_driver() postgres and the default `database` section, first creates the daemon's
  // database on the shared cluster (dropped with the Daemon); where PostgreSQL cannot start it
  // fails the test case (CI) or prints postgres_skip_marker and throws.
  explicit Daemon(DaemonConfig config = {});
  // Kills the process if it still runs; removes the temp dir unless PAYORCH_KEEP_TEST_DIRS is
  // set in the environment.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Environment for the next start()/run_command() (e.g. PAYORCH_FAILPOINTS). An empty
  // optional removes the variable. PAYORCH_FAILPOINTS, PAYORCH_TEST_SHARED_DATABASE,
  // CREDENTIALS_DIRECTORY and systemd's NOTIFY_SOCKET, WATCHDOG_* and LISTEN_* are never
  // inherited from the test run; set them here.
  void set_env(const std::string& name, std::optional<std::string> value);
  // Arguments appended to `payorchd serve ...` from the next start on (e.g. an override flag).
  void set_serve_args(std::vector<std::string> args) { serve_args_ = std::move(args); }

  // Spawns `payorchd serve` and waits (up to `timeout`) for the port file. Throws
  // std::runtime_error with the log tail if the daemon exits or the port never appears.
  void start(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Spawns `payorchd serve` expecting it to refuse to start: waits for the exit and returns
  // it. Throws if it writes a port file (it started) or is still running after `timeout`.
  ExitStatus start_expecting_exit(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGKILL and reap.
  void kill9();
  // SIGTERM and wait for the exit (SIGKILL after `timeout`, reported as such).
  ExitStatus terminate(std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // Kills the process if still running (SIGKILL), then start() on the same dir and database.
  void restart(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits for the process to exit on its own; nullopt on timeout (still running).
  std::optional<ExitStatus> wait_exit(std::chrono::milliseconds timeout);
  bool running();

  // Runs `payorchd <args...>` to completion (e.g. {"migrate", "--config", config_path()}),
  // killing it after `timeout`.
  CommandResult run_command(const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout = std::chrono::seconds(20));

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  const std::string& dir() const { return dir_; }
  std::string config_path() const { return dir_ + "/payorch.yaml"; }
  std::string db_path() const { return dir_ + "/payorch.db"; }
  // The libpq URI of the daemon's PostgreSQL database; "" on SQLite.
  std::string database_url() const;
  // The `database` section this daemon's config holds, as written (a second daemon given it
  // serves the same database).
  const std::string& database_section() const { return database_section_; }
  std::string log_path() const { return dir_ + "/payorchd.log"; }
  std::string port_file() const { return dir_ + "/port"; }
  // The last `max_bytes` of the daemon's log (all starts, separated by marker lines).
  std::string log_tail(std::size_t max_bytes = 4096) const;

private:
  // `payorchd <args...>`, argv[0] first.
  std::vector<std::string> argv(const std::vector<std::string>& args) const;
  // Spawns `payorchd serve` with the port file removed and a marker line in the log.
  void spawn_serve(const std::string& note);
  std::vector<std::string> environment() const;

  std::string dir_;
  std::unique_ptr<PostgresDatabase> postgres_;
  std::string database_section_;
  std::map<std::string, std::optional<std::string>> env_overrides_;
  std::vector<std::string> serve_args_;
  ChildProcess process_;
  std::uint16_t port_ = 0;
  int starts_ = 0;
  int commands_ = 0;
};

// How many file descriptors process `pid` has open (0 if it cannot be read): a daemon's open
// connections, seen from outside.
std::size_t open_fds(pid_t pid);

}  // namespace payorch::test
