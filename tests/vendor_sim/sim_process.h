#pragma once
// Runs the real payorch-vendor-sim as a child process: a fresh temp dir holding its ledger, its
// log and its port file; port 0 (never a fixed port); no callbacks unless a test names a URL.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"

namespace payorch::test {

inline constexpr const char* sim_api_key = "sim-test-key-1234";
inline constexpr const char* sim_callback_secret = "sim-test-callback-secret";

class SimProcess {
public:
  // Starts the sim with the test defaults, then `extra_args` (a later flag wins). Throws with
  // the log tail if it does not come up within 10 s.
  explicit SimProcess(std::vector<std::string> extra_args = {});
  // SIGKILL if still running; removes the temp dir unless PAYORCH_KEEP_TEST_DIRS is set.
  ~SimProcess();
  SimProcess(const SimProcess&) = delete;
  SimProcess& operator=(const SimProcess&) = delete;

  void kill9();
  // SIGTERM and wait (SIGKILL after `timeout`).
  ExitStatus terminate(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // kill -9, then start again on the same ledger with the same arguments.
  void restart();

  std::uint16_t port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string db_path() const { return dir_ + "/sim.db"; }
  std::string log_tail(std::size_t max_bytes = 4096) const;

  // Requests with the right bearer token.
  HttpResponse post_charge(const std::string& idempotency_key, const std::string& body,
                           std::chrono::milliseconds timeout = default_http_timeout) const;
  HttpResponse get(const std::string& target) const;
  // The control API (no token).
  HttpResponse control(const std::string& method, const std::string& target,
                       const std::string& body = {}) const;
  // SELECT COUNT(*) FROM charges WHERE reference = ?, read from the file.
  std::int64_t count_charges(const std::string& reference) const;

private:
  void start();

  std::string dir_;
  std::vector<std::string> args_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
  int starts_ = 0;
};

// The body of a charge request for `key`.
std::string charge_body(const std::string& key, const std::string& source = "tok_ok",
                        std::int64_t amount_minor = 1000, const std::string& currency = "EUR",
                        const std::string& payee = "merchant-1");

// Runs payorch-vendor-sim with `args` to completion (for flag errors); output is
// stdout+stderr.
CommandResult run_sim_command(const std::vector<std::string>& args,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace payorch::test
