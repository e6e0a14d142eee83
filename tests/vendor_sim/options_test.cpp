#include "vendor_sim/options.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "vendor_sim/callback_client.h"
#include "vendor_sim/dispatcher.h"

namespace {

using namespace payorch::vendor_sim;
using namespace std::chrono_literals;

Options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "payorch-vendor-sim");
  return parse_options(static_cast<int>(args.size()), args.data());
}

}  // namespace

TEST_CASE("sim options: the defaults are conf/payorchd.yaml's sim provider") {
  const Options o = parse({});
  CHECK(o.listen_host == "127.0.0.1");
  CHECK(o.listen_port == 8090);
  CHECK(o.api_key == "sim-demo-key");
  CHECK(o.callback_url == "http://127.0.0.1:8080/v1/callbacks/sim");
  CHECK(o.callback_secret == "sim-callback-secret");
  CHECK(o.db_path == "var/sim.db");
  CHECK(o.key_retention == 24h);
  CHECK(o.pending_delay == 2s);
  CHECK(o.callback_horizon == 24h);
  CHECK(o.callback_initial_backoff == 1s);
  CHECK(o.callback_max_backoff == 60s);
  CHECK(o.config.lookup_enabled);
  CHECK(o.faults.empty());
}

TEST_CASE("sim options: every flag, both spellings") {
  const std::string secret_path = "/tmp/payorch-sim-options-test-secret";
  {
    std::ofstream(secret_path) << "from-file\n";
  }
  const Options o = parse({"--listen", "[::1]:0", "--port-file=/tmp/p", "--db", "x.db",
                           "--api-key-file", secret_path.c_str(), "--callback-url",
                           "http://localhost:9/cb?x=1", "--callback-secret", "s3",
                           "--key-retention", "1h", "--pending-delay=250ms",
                           "--callback-horizon", "5m", "--callback-initial-backoff", "100ms",
                           "--callback-max-backoff", "2s", "--callback-timeout", "1s", "--fault",
                           "latency,delay_ms=5", "--fault", "commit_then_5xx,count=-1",
                           "--no-lookup", "--no-callbacks", "--duplicate-callbacks",
                           "--clock-offset-ms", "-5"});
  std::remove(secret_path.c_str());
  CHECK(o.listen_host == "::1");
  CHECK(o.listen_port == 0);
  CHECK(o.port_file == "/tmp/p");
  CHECK(o.db_path == "x.db");
  CHECK(o.api_key == "from-file");
  CHECK(o.callback_url == "http://localhost:9/cb?x=1");
  CHECK(o.callback_secret == "s3");
  CHECK(o.key_retention == 1h);
  CHECK(o.pending_delay == 250ms);
  CHECK(o.callback_horizon == 5min);
  CHECK(o.callback_initial_backoff == 100ms);
  CHECK(o.callback_max_backoff == 2s);
  CHECK(o.callback_timeout == 1s);
  REQUIRE(o.faults.size() == 2);
  CHECK(o.faults[1].count == -1);
  CHECK_FALSE(o.config.lookup_enabled);
  CHECK_FALSE(o.config.callbacks_enabled);
  CHECK(o.config.duplicate_callbacks);
  CHECK(o.config.clock_offset_ms == -5);
  CHECK(parse({"--callback-url", "none"}).callback_url.empty());
}

TEST_CASE("sim options: bad flags are usage errors naming the flag") {
  const std::vector<std::vector<const char*>> bad = {
      {"--bogus"},
      {"--listen"},
      {"--listen", "localhost:8090"},
      {"--listen", "127.0.0.1:70000"},
      {"--key-retention", "24"},
      {"--pending-delay", "0s"},
      {"--callback-url", "https://example.com/x"},
      {"--callback-url", "ftp://x"},
      {"--api-key-file", "/nonexistent/key"},
      {"--api-key", ""},
      {"--fault", "explode"},
      {"--no-lookup=1"},
      {"--clock-offset-ms", "1.5"},
      {"--callback-initial-backoff", "10s", "--callback-max-backoff", "1s"},
  };
  for (const auto& args : bad) CHECK_THROWS_AS(parse(args), UsageError);
  try {
    parse({"--key-retention", "soon"});
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("--key-retention") != std::string::npos);
  }
}

TEST_CASE("sim dispatcher: retry delay doubles from the initial one up to the cap") {
  CHECK(retry_delay(1, 1s, 60s) == 1s);
  CHECK(retry_delay(2, 1s, 60s) == 2s);
  CHECK(retry_delay(6, 1s, 60s) == 32s);
  CHECK(retry_delay(7, 1s, 60s) == 60s);
  CHECK(retry_delay(1000, 1s, 60s) == 60s);
}

TEST_CASE("sim callback URL: only plain http, with its parts") {
  auto u = parse_http_url("http://localhost:9/cb?x=1");
  REQUIRE(u);
  CHECK(u->host == "localhost");
  CHECK(u->port == "9");
  CHECK(u->target == "/cb?x=1");
  u = parse_http_url("http://[::1]:8080");
  REQUIRE(u);
  CHECK(u->host == "::1");
  CHECK(u->target == "/");
  u = parse_http_url("http://127.0.0.1/v1/callbacks/sim");
  REQUIRE(u);
  CHECK(u->port == "80");
  for (const char* bad : {"https://x/y", "http://user@x/", "http://x/#f", "x/y", "http://", ""})
    CHECK_MESSAGE(!parse_http_url(bad), bad);
}

TEST_CASE("sim options: durations are a positive whole number of one unit, at most ten years") {
  CHECK(parse_duration("250ms") == 250ms);
  CHECK(parse_duration("2s") == 2s);
  CHECK(parse_duration("5m") == 5min);
  CHECK(parse_duration("24h") == 24h);
  CHECK(parse_duration("7d") == std::chrono::hours(24 * 7));
  CHECK(parse_duration("007s") == 7s);
  CHECK(parse_duration("3650d") == std::chrono::hours(24 * 3650));
  for (const char* bad : {"", "0s", "1.5s", "-2s", "+2s", "2", "2 s", " 2s", "2sec", "s", "2S",
                          "3651d", "99999999999999999999ms"})
    CHECK_MESSAGE(!parse_duration(bad), bad);
}
