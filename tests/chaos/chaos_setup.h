#pragma once
// The processes of a chaos run, as both chaos tests set them up: fixed loopback ports, the
// sim's arguments (fast pending charges and callbacks, calling one payorchd back), and
// payorchd's configuration (roomy retries, risk caps out of the way, short leases).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/daemon.h"

namespace payorch::test {
class VendorSim;
}

namespace payorch::chaos {

// `n` distinct loopback ports, free a moment ago. Fixed for the run: the sim calls back to a
// payorchd across its restarts, clients find every node again, and payorchd's base_url stays
// valid across the sim's restarts.
std::vector<std::uint16_t> fixed_ports(int n);

// payorch-vendor-sim's arguments: listening on `sim_port`, calling back payorchd on
// `callback_port`.
std::vector<std::string> chaos_sim_args(std::uint16_t sim_port, std::uint16_t callback_port);

// payorchd on 127.0.0.1:`port` beside `sim` (SQLite in its own dir; replace `database` and
// `engine` for PostgreSQL).
test::DaemonConfig chaos_daemon_config(const test::VendorSim& sim, std::uint16_t port);

// A vendor emulator's provider as payorchd's configuration names it.
struct EmulatorProvider {
  std::string name;  // provider and adapter: "adyen", "stripe"
  std::string base_url;
  std::string api_key;
  std::string callback_secret;
  std::string key_retention;  // how long the vendor keeps an idempotency key: "7d", "24h"
  std::string options;  // the provider's `options:` flow mapping, "" for none
};

// payorchd on 127.0.0.1:`port` with the one provider `provider` (recovery: replay, the default
// route), with the same retries, risk caps and timeouts as against the sim.
test::DaemonConfig chaos_emulator_daemon_config(const EmulatorProvider& provider, std::uint16_t port);

// The Adyen emulator's (support/adyen_emulator.h) at `adyen_base_url`.
test::DaemonConfig chaos_adyen_daemon_config(const std::string& adyen_base_url, std::uint16_t port);
// The Stripe emulator's (support/stripe_emulator.h) at `stripe_base_url`.
test::DaemonConfig chaos_stripe_daemon_config(const std::string& stripe_base_url, std::uint16_t port);

// Lines of the file at `path` that contain `needle`.
std::int64_t count_lines(const std::string& path, std::string_view needle);

// The verdict line of `payorchd check-exposure` ("...: exposure ok (...)" or "...: the kept
// exposure differs ..."), or "(no verdict) " and the output's start.
std::string exposure_verdict(const std::string& output);

}  // namespace payorch::chaos
