#pragma once
// payorch-vendor-sim's command line. Every default matches the `sim` provider of
// conf/payorchd.yaml, so `payorch-vendor-sim` with no flags is the demo vendor of `conf/`.
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "vendor_sim/faults.h"

namespace payorch::vendor_sim {

using Millis = std::chrono::milliseconds;

// A bad flag or value; what() is one line naming the flag.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The behaviour switches that the control API (POST /_sim/config) can also change at run time.
struct SimConfig {
  bool lookup_enabled = true;       // false: GET /v1/charges?reference= answers 404 not_supported
  bool callbacks_enabled = true;    // false: new callbacks are not queued, queued ones wait
  bool duplicate_callbacks = false; // true: each callback queued from now on is delivered twice
  std::int64_t clock_offset_ms = 0; // added to the wall clock for every sim decision
};

struct Options {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8090;  // 0 = any free port (tests), see port_file
  std::optional<std::string> port_file;
  std::string db_path = "var/sim.db";
  std::string api_key = "sim-demo-key";  // never logged
  // Empty: no callbacks at all (`--callback-url none`).
  std::string callback_url = "http://127.0.0.1:8080/v1/callbacks/sim";
  std::string callback_secret = "sim-callback-secret";  // never logged
  Millis key_retention{std::chrono::hours(24)};
  Millis pending_delay{2'000};
  Millis callback_horizon{std::chrono::hours(24)};
  Millis callback_initial_backoff{1'000};
  Millis callback_max_backoff{60'000};
  Millis callback_timeout{5'000};   // one delivery attempt, connect to last byte
  SimConfig config;
  std::vector<Fault> faults;        // queued at start, in order
  bool help = false;
};

// Parses argv (argv[0] is skipped). Throws UsageError on an unknown flag, a missing or bad
// value, or an unreadable *-file. Secrets read from files lose one trailing newline.
Options parse_options(int argc, const char* const* argv);

// The usage text printed for --help and after a UsageError.
std::string_view usage();

// "250ms", "2s", "5m", "24h", "7d": a positive whole number of one unit, at most ten years;
// nullopt for anything else ("0s", "1.5s", "-2s", "2", "2 s", "2sec").
std::optional<Millis> parse_duration(std::string_view text);

// "127.0.0.1:8090", "[::1]:0" → host and port; false when malformed.
bool parse_listen(std::string_view text, std::string& host, std::uint16_t& port);

}  // namespace payorch::vendor_sim
