#include "vendor_sim/options.h"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "vendor_sim/callback_client.h"

namespace payorch::vendor_sim {
namespace {

constexpr std::string_view usage_text =
    "usage: payorch-vendor-sim [options]\n"
    "The demo payment vendor and test double of payorch (docs/contract.md §5, the `sim` protocol).\n"
    "It has NO authentication on its control API (/_sim/...): never expose it.\n"
    "\n"
    "  --listen HOST:PORT            listen address (127.0.0.1:8090; port 0 = any free port)\n"
    "  --port-file FILE              write the bound port here once listening (atomically)\n"
    "  --db PATH                     the ledger, an SQLite file (var/sim.db)\n"
    "  --api-key KEY                 the bearer token clients must send (sim-demo-key)\n"
    "  --api-key-file FILE           ... read from a file instead\n"
    "  --callback-url URL|none       where callbacks are POSTed\n"
    "                                (http://127.0.0.1:8080/v1/callbacks/sim; none = no callbacks)\n"
    "  --callback-secret SECRET      HMAC secret of Sim-Signature (sim-callback-secret)\n"
    "  --callback-secret-file FILE   ... read from a file instead\n"
    "  --key-retention DUR           how long an Idempotency-Key is honoured (24h)\n"
    "  --pending-delay DUR           tok_pending succeeds after this (2s)\n"
    "  --callback-horizon DUR        a callback is retried until this old (24h)\n"
    "  --callback-initial-backoff DUR  first retry delay, doubled per attempt (1s)\n"
    "  --callback-max-backoff DUR    retry delay cap (60s)\n"
    "  --callback-timeout DUR        one delivery attempt (5s)\n"
    "  --fault MODE[,count=N][,delay_ms=M][,source=TOKEN][,operation=charge|refund]\n"
    "                                queue a fault (repeatable); MODE is\n"
    "                                fail_before_commit, commit_then_5xx, commit_then_hang,\n"
    "                                delayed_commit or latency\n"
    "  --no-lookup                   GET /v1/{charges,refunds}?reference= answer 404 not_supported\n"
    "  --no-callbacks                start with callbacks disabled\n"
    "  --duplicate-callbacks         deliver every callback twice\n"
    "  --clock-offset-ms N           start with the sim clock moved by N ms\n"
    "  --help                        this text\n"
    "Durations: 250ms, 2s, 5m, 24h, 7d.\n";

std::string read_secret_file(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(flag + ": cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  if (secret.ends_with('\n')) secret.pop_back();
  if (secret.ends_with('\r')) secret.pop_back();
  if (secret.empty()) throw UsageError(flag + ": " + path + " is empty");
  return secret;
}

// The longest duration a flag takes: ten years.
constexpr Millis max_duration{std::chrono::hours(24 * 3650)};

Millis duration_value(const std::string& flag, const std::string& text) {
  const auto d = parse_duration(text);
  if (!d) throw UsageError(flag + ": expected a duration like 250ms, 2s, 5m, 24h, 7d; got \"" +
                           text + "\"");
  return *d;
}

std::string nonempty(const std::string& flag, const std::string& text) {
  if (text.empty()) throw UsageError(flag + ": must not be empty");
  return text;
}

}  // namespace

std::string_view usage() { return usage_text; }

std::optional<Millis> parse_duration(std::string_view text) {
  const char* const end = text.data() + text.size();
  std::int64_t count = 0;
  const auto [unit, ec] = std::from_chars(text.data(), end, count);
  if (ec != std::errc() || unit == text.data() || !std::isdigit(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  const std::string_view suffix(unit, static_cast<std::size_t>(end - unit));
  std::int64_t ms_per_unit = 0;
  if (suffix == "ms") ms_per_unit = 1;
  else if (suffix == "s") ms_per_unit = 1'000;
  else if (suffix == "m") ms_per_unit = 60'000;
  else if (suffix == "h") ms_per_unit = 3'600'000;
  else if (suffix == "d") ms_per_unit = 86'400'000;
  else return std::nullopt;
  if (count <= 0 || count > max_duration.count() / ms_per_unit) return std::nullopt;
  return Millis{count * ms_per_unit};
}

bool parse_listen(std::string_view text, std::string& host, std::uint16_t& port) {
  std::string_view h;
  std::string_view p;
  int family = AF_INET;
  if (text.starts_with('[')) {
    const std::size_t close = text.find("]:");
    if (close == std::string_view::npos) return false;
    h = text.substr(1, close - 1);
    p = text.substr(close + 2);
    family = AF_INET6;
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return false;
    h = text.substr(0, colon);
    p = text.substr(colon + 1);
  }
  unsigned char addr[16];
  const std::string host_z(h);
  if (inet_pton(family, host_z.c_str(), addr) != 1) return false;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || ec != std::errc() || end != p.data() + p.size() || value > 65535) return false;
  host = host_z;
  port = static_cast<std::uint16_t>(value);
  return true;
}

Options parse_options(int argc, const char* const* argv) {
  Options o;
  using Setter = std::function<void(const std::string& flag, const std::string& value)>;
  const std::map<std::string, Setter, std::less<>> with_value = {
      {"--listen",
       [&](const std::string& f, const std::string& v) {
         if (!parse_listen(v, o.listen_host, o.listen_port))
           throw UsageError(f + ": expected HOST:PORT with a numeric IPv4 host or [IPv6]:PORT, "
                                "got \"" + v + "\"");
       }},
      {"--port-file", [&](const std::string& f, const std::string& v) { o.port_file = nonempty(f, v); }},
      {"--db", [&](const std::string& f, const std::string& v) { o.db_path = nonempty(f, v); }},
      {"--api-key", [&](const std::string& f, const std::string& v) { o.api_key = nonempty(f, v); }},
      {"--api-key-file",
       [&](const std::string& f, const std::string& v) { o.api_key = read_secret_file(f, v); }},
      {"--callback-url",
       [&](const std::string& f, const std::string& v) {
         if (v.empty() || v == "none") {
           o.callback_url.clear();
           return;
         }
         if (!parse_http_url(v))
           throw UsageError(f + ": expected http://HOST[:PORT]/PATH or none, got \"" + v + "\"");
         o.callback_url = v;
       }},
      {"--callback-secret",
       [&](const std::string& f, const std::string& v) { o.callback_secret = nonempty(f, v); }},
      {"--callback-secret-file",
       [&](const std::string& f, const std::string& v) { o.callback_secret = read_secret_file(f, v); }},
      {"--key-retention",
       [&](const std::string& f, const std::string& v) { o.key_retention = duration_value(f, v); }},
      {"--pending-delay",
       [&](const std::string& f, const std::string& v) { o.pending_delay = duration_value(f, v); }},
      {"--callback-horizon",
       [&](const std::string& f, const std::string& v) { o.callback_horizon = duration_value(f, v); }},
      {"--callback-initial-backoff",
       [&](const std::string& f, const std::string& v) {
         o.callback_initial_backoff = duration_value(f, v);
       }},
      {"--callback-max-backoff",
       [&](const std::string& f, const std::string& v) { o.callback_max_backoff = duration_value(f, v); }},
      {"--callback-timeout",
       [&](const std::string& f, const std::string& v) { o.callback_timeout = duration_value(f, v); }},
      {"--fault",
       [&](const std::string& f, const std::string& v) {
         std::string error;
         auto fault = parse_fault_spec(v, error);
         if (!fault) throw UsageError(f + ": " + error);
         o.faults.push_back(std::move(*fault));
       }},
      {"--clock-offset-ms",
       [&](const std::string& f, const std::string& v) {
         std::int64_t n = 0;
         const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
         if (v.empty() || ec != std::errc() || end != v.data() + v.size())
           throw UsageError(f + ": expected an integer number of milliseconds, got \"" + v + "\"");
         o.config.clock_offset_ms = n;
       }},
  };
  const std::map<std::string, std::function<void()>, std::less<>> switches = {
      {"--no-lookup", [&] { o.config.lookup_enabled = false; }},
      {"--no-callbacks", [&] { o.config.callbacks_enabled = false; }},
      {"--duplicate-callbacks", [&] { o.config.duplicate_callbacks = true; }},
      {"--help", [&] { o.help = true; }},
  };

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    if (const std::size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    if (const auto sw = switches.find(arg); sw != switches.end()) {
      if (inline_value) throw UsageError(arg + ": takes no value");
      sw->second();
      continue;
    }
    const auto setter = with_value.find(arg);
    if (setter == with_value.end()) throw UsageError("unknown argument \"" + arg + "\"");
    if (!inline_value) {
      if (i + 1 >= argc) throw UsageError(arg + ": missing value");
      inline_value = argv[++i];
    }
    setter->second(arg, *inline_value);
  }
  if (o.callback_max_backoff < o.callback_initial_backoff)
    throw UsageError("--callback-max-backoff must not be shorter than --callback-initial-backoff");
  return o;
}

}  // namespace payorch::vendor_sim
