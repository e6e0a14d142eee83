#pragma once
// Runs the real payorch-vendor-sim as a child process, for its own protocol tests and next to a
// payorchd under test: a fresh temp dir holding its ledger (an SQLite file tests read directly),
// its log and its port file; port 0 (never a fixed port); no callbacks unless a test passes
// --callback-url. Also renders the YAML of a payorchd provider pointing at it.
#include <sys/types.h>

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/process.h"
#include "support/sqlite_probe.h"

namespace payorch::test {

// The bearer token the sim expects; the same as DaemonConfig's default provider api_key.
inline constexpr const char* vendor_sim_api_key = "sim-key-1234";

class VendorSim {
public:
  // Starts the sim with `--listen 127.0.0.1:0 --port-file --db --api-key vendor_sim_api_key
  // --callback-url none`, then `extra_args` (a later flag wins, e.g. "--pending-delay", "1s").
  // Throws with the log tail if it does not come up within 10 s.
  explicit VendorSim(std::vector<std::string> extra_args = {});
  // SIGKILL if still running; removes the temp dir unless PAYORCH_KEEP_TEST_DIRS is set.
  ~VendorSim();
  VendorSim(const VendorSim&) = delete;
  VendorSim& operator=(const VendorSim&) = delete;

  void kill9();
  // SIGTERM and wait (SIGKILL after `timeout`).
  ExitStatus terminate(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // kill -9 if running, then start again on the same ledger with the same arguments (a new port).
  void restart();
  // The same, on the port it had: a vendor that was down comes back where payorchd looks.
  void restart_on_same_port();
  bool running();

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  // "http://127.0.0.1:<port>": a provider's base_url.
  std::string base_url() const;
  const std::string& dir() const { return dir_; }
  std::string db_path() const { return dir_ + "/sim.db"; }
  std::string log_path() const { return dir_ + "/sim.log"; }
  std::string log_tail(std::size_t max_bytes = 4096) const;

  // Requests with the right bearer token.
  HttpResponse post_charge(const std::string& idempotency_key, const std::string& body,
                           std::chrono::milliseconds timeout = default_http_timeout) const;
  HttpResponse post_refund(const std::string& idempotency_key, const std::string& body,
                           std::chrono::milliseconds timeout = default_http_timeout) const;
  HttpResponse get(const std::string& target) const;
  // The control API (/_sim/..., no token).
  HttpResponse control(std::string_view method, std::string_view target,
                       const std::string& body = {}) const;
  // POST /_sim/faults {"mode", "count", "delay_ms"?, "source"?, "operation"?}; count -1 = every
  // request; operation "charge" or "refund" (both when absent). Throws unless the sim answers 200.
  void add_fault(std::string_view mode, std::int64_t count = 1,
                 std::optional<std::int64_t> delay_ms = std::nullopt,
                 std::optional<std::string> source = std::nullopt,
                 std::optional<std::string> operation = std::nullopt) const;
  // DELETE /_sim/faults. Throws unless 200.
  void clear_faults() const;
  // POST /_sim/config with `patch` (e.g. {"lookup_enabled": false}). Throws unless 200.
  void set_config(const boost::json::object& patch) const;
  // GET /_sim/ledger: every charge (charge JSON plus source and times).
  std::vector<boost::json::object> ledger() const;

  // Read from the ledger file: SELECT ... FROM charges WHERE reference = ?.
  std::int64_t count_charges(const std::string& reference) const;
  std::vector<SqlRow> charges(const std::string& reference) const;
  // Read from the ledger file: SELECT ... FROM refunds WHERE reference = ? (or charge_id = ?).
  std::int64_t count_refunds(const std::string& reference) const;
  std::vector<SqlRow> refunds(const std::string& reference) const;
  std::vector<SqlRow> refunds_of_charge(const std::string& charge_id) const;
  // Log lines about charge requests for this reference (created, replayed, refused, failed):
  // how many POST /v1/charges the sim saw for a key, faults included.
  int charge_requests_logged(const std::string& reference) const;

private:
  HttpResponse post(std::string_view path, const std::string& idempotency_key,
                    const std::string& body, std::chrono::milliseconds timeout) const;
  void start(const std::vector<std::string>& extra = {});

  std::string dir_;
  std::vector<std::string> args_;
  ChildProcess process_;
  std::uint16_t port_ = 0;
};

// The body of a POST /v1/charges for `key`.
std::string charge_body(const std::string& key, const std::string& source = "tok_ok",
                        std::int64_t amount_minor = 1000, const std::string& currency = "EUR",
                        const std::string& payee = "merchant-1");

// The body of a POST /v1/refunds for `key`, refunding `charge_id`.
std::string refund_body(const std::string& key, const std::string& charge_id,
                        std::int64_t amount_minor = 1000, const std::string& currency = "EUR");

// Runs payorch-vendor-sim with `args` to completion (for flag errors); output is
// stdout+stderr.
CommandResult run_sim_command(const std::vector<std::string>& args,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10));

// One payorchd provider entry (adapter sim, or another adapter pointed at an emulator) as
// YAML. The defaults are the fast engine-test settings; replace a whole flow mapping to vary it.
struct SimProviderConfig {
  std::string name = "sim";
  std::string adapter = "sim";
  std::string base_url = {};
  std::string api_key = vendor_sim_api_key;
  std::string timeouts = "{connect: 1s, request: 2s}";
  std::string contract = "{key_retention: 24h, recovery: lookup, not_found_final_after: 2s}";
  std::string retry = "{max_attempts: 6, initial_backoff: 200ms, max_backoff: 1s, give_up_after: 1h}";
  std::string risk = "{max_unknown_count: 100, max_unknown_amount_minor: 100000000}";
  std::string callback = "{secret: \"sim-callback-secret\", tolerance: 5m, retry_horizon: 24h}";
  std::string options = {};  // providers[].options, e.g. "{merchant_account: X}"; none when empty
  // api_key and callback are left out when empty (wechatpay and alipay take every key from
  // options).

  // "  - name: ...\n    adapter: ...\n..." (a list item under `providers:`).
  std::string yaml() const;
};

// The whole `providers:` section.
std::string providers_yaml(const std::vector<SimProviderConfig>& providers);

// The engine section the engine tests use: 4 workers, 3 s lease, 100 ms poll interval.
inline constexpr const char* fast_engine_yaml = "engine: {workers: 4, lease: 3s, poll_interval: 100ms}";

}  // namespace payorch::test
