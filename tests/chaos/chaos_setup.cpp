#include "chaos/chaos_setup.h"

#include <memory>
#include <sstream>

#include "support/adyen_emulator.h"
#include "support/engine_checks.h"
#include "support/ports.h"
#include "support/stripe_emulator.h"
#include "support/process.h"
#include "support/vendor_sim.h"

namespace payorch::chaos {
namespace {

// Room for long recoveries (lookups until a "not found" is trusted, resubmits, pending charges):
// the aim is that every payment ends terminal; a case is still accepted (and counted).
constexpr const char* chaos_retry =
    "{max_attempts: 30, initial_backoff: 100ms, max_backoff: 1s, give_up_after: 1h}";
// High enough that the faults' UNKNOWNs do not pause intake for the whole run.
constexpr const char* chaos_risk = "{max_unknown_count: 10000, max_unknown_amount_minor: 1000000000000}";

}  // namespace

std::vector<std::uint16_t> fixed_ports(int n) {
  // All bound at once, so that they are distinct; released before the processes bind them.
  std::vector<std::unique_ptr<test::RefusingPort>> held;
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < n; ++i) {
    held.push_back(std::make_unique<test::RefusingPort>());
    ports.push_back(held.back()->port());
  }
  return ports;
}

std::vector<std::string> chaos_sim_args(std::uint16_t sim_port, std::uint16_t callback_port) {
  return {"--listen", "127.0.0.1:" + std::to_string(sim_port), "--callback-url",
          "http://127.0.0.1:" + std::to_string(callback_port) + "/v1/callbacks/sim",
          "--pending-delay", "1s", "--callback-initial-backoff", "200ms",
          "--callback-max-backoff", "1s", "--callback-timeout", "1s"};
}

test::DaemonConfig chaos_daemon_config(const test::VendorSim& sim, std::uint16_t port) {
  test::DaemonConfig config = test::engine_daemon_config({{.base_url = sim.base_url(),
                                                           .timeouts = "{connect: 500ms, request: 2s}",
                                                           .retry = chaos_retry,
                                                           .risk = chaos_risk}});
  config.server = "server: {listen: \"127.0.0.1:" + std::to_string(port) + "\", max_body_bytes: 65536}";
  return config;
}

test::DaemonConfig chaos_emulator_daemon_config(const EmulatorProvider& provider, std::uint16_t port) {
  test::DaemonConfig config;
  config.providers = "providers:\n"
                     "  - name: " + provider.name + "\n" +
                     "    adapter: " + provider.name + "\n" +
                     "    base_url: \"" + provider.base_url + "\"\n" +
                     "    api_key: \"" + provider.api_key + "\"\n" +
                     "    timeouts: {connect: 500ms, request: 2s}\n"
                     "    contract: {key_retention: " + provider.key_retention + ", recovery: replay}\n" +
                     "    retry: " + chaos_retry + "\n" +
                     "    risk: " + chaos_risk + "\n" +
                     "    callback: {secret: \"" + provider.callback_secret +
                     "\", tolerance: 5m, retry_horizon: 24h}" +
                     (provider.options.empty() ? std::string() : "\n    options: " + provider.options);
  config.routing = "routing: {default_provider: " + provider.name + "}";
  config.server = "server: {listen: \"127.0.0.1:" + std::to_string(port) + "\", max_body_bytes: 65536}";
  config.engine = "engine: {workers: 8, lease: 3s, poll_interval: 100ms}";
  return config;
}

test::DaemonConfig chaos_adyen_daemon_config(const std::string& adyen_base_url, std::uint16_t port) {
  return chaos_emulator_daemon_config({.name = "adyen",
                                       .base_url = adyen_base_url,
                                       .api_key = test::adyen_emulator_api_key,
                                       .callback_secret = test::adyen_emulator_hmac_key,
                                       .key_retention = "7d",
                                       .options = std::string("{merchant_account: ") +
                                                  test::adyen_emulator_merchant + "}"},
                                      port);
}

test::DaemonConfig chaos_stripe_daemon_config(const std::string& stripe_base_url, std::uint16_t port) {
  // Stripe keeps a key at least 24 h (https://docs.stripe.com/api/idempotent_requests).
  return chaos_emulator_daemon_config({.name = "stripe",
                                       .base_url = stripe_base_url,
                                       .api_key = test::stripe_emulator_api_key,
                                       .callback_secret = test::stripe_emulator_webhook_secret,
                                       .key_retention = "24h",
                                       .options = ""},
                                      port);
}

std::int64_t count_lines(const std::string& path, std::string_view needle) {
  std::istringstream in(test::read_file(path));
  std::int64_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

std::string exposure_verdict(const std::string& output) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.find(": exposure ok") != std::string::npos ||
        line.find(": the kept exposure differs") != std::string::npos)
      return line;
  return "(no verdict) " + output.substr(0, 200);
}

}  // namespace payorch::chaos
