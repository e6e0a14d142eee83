// Two payorchd on one PostgreSQL database, one of them with its own wall clock five minutes
// ahead (libfaketime), beside a vendor that holds every charge 6 s: the times one node stores
// and the other compares (a lease's expiry, a due time, the first submit behind the retry
// budget) come from the database server's clock (store/postgres/server_clock.h), so the skewed
// node neither takes over a lease that is still live nor judges a retry budget spent
// (docs/postgres.md, "Time across nodes"). Without the server's clock the skewed node took over
// live leases at once and ended payments the vendor had charged UNKNOWN with a case.
#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/connection.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/faketime.h"
#include "support/payorch_api.h"
#include "support/postgres_cluster.h"
#include "support/slowdown.h"
#include "support/vendor_sim.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

constexpr std::chrono::seconds skew = 5min;
constexpr std::int64_t vendor_delay_ms = 6000;
constexpr int payments = 40;

// A request timeout above the vendor's delay, a lease with the slack the start-up check asks
// for, and the 90 s retry budget a skewed node judged spent at once.
DaemonConfig skew_daemon_config(const PostgresDatabase& db, const VendorSim& sim, const std::string& node) {
  DaemonConfig config;
  config.providers =
      "providers:\n"
      "  - name: sim\n"
      "    adapter: sim\n"
      "    base_url: \"" + sim.base_url() + "\"\n"
      "    api_key: \"sim-key-1234\"\n"
      "    timeouts: {connect: 1s, request: 10s}\n"
      "    contract: {key_retention: 24h, recovery: lookup, not_found_final_after: 30s}\n"
      "    retry: {max_attempts: 10, initial_backoff: 200ms, max_backoff: 1s, give_up_after: 90s}\n"
      "    risk: {max_unknown_count: 1000, max_unknown_amount_minor: 100000000}\n"
      "    callback: {secret: \"sim-callback-secret\", tolerance: 5m, retry_horizon: 24h}";
  config.database = "database: {driver: postgres, url: \"" + db.url() + "\", pool_size: 4}";
  config.engine = "engine: {node_id: " + node + ", workers: 12, lease: 12s, poll_interval: 100ms}";
  return config;
}

std::int64_t count_rows(const PostgresDatabase& db, const std::string& sql) {
  store::pg::Connection conn(db.url());
  return conn.exec(sql).integer(0, 0);
}

// ` key=value` of one log line ("" when absent).
std::string field(const std::string& line, const std::string& key) {
  const std::size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size() + 2;
  return line.substr(start, line.find(' ', start) - start);
}

// Every engine.vendor_call of the daemons' logs, by payment id: "call@fence", in log order.
std::map<std::string, std::vector<std::string>> vendor_calls(const std::vector<const Daemon*>& daemons) {
  std::map<std::string, std::vector<std::string>> calls;
  for (const Daemon* d : daemons) {
    const std::string log = read_file(d->log_path());
    std::size_t bol = 0;
    while (bol < log.size()) {
      std::size_t eol = log.find('\n', bol);
      if (eol == std::string::npos) eol = log.size();
      const std::string line = log.substr(bol, eol - bol);
      if (line.find(" event=engine.vendor_call ") != std::string::npos)
        calls[field(line, "payment_id")].push_back(field(line, "call") + "@" + field(line, "fence"));
      bol = eol + 1;
    }
  }
  return calls;
}

// The ts= of the first line of a daemon's log, in seconds since the epoch (0 when none).
std::time_t first_log_time(const Daemon& d) {
  const std::string ts = field(read_file(d.log_path()), "ts");
  std::tm tm{};
  if (ts.empty() || strptime(ts.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  return timegm(&tm);
}

}  // namespace

TEST_CASE("postgres clock: a node whose own clock is 5 min ahead takes over no live lease and "
          "spends no retry budget") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  const std::optional<std::string> faketime = libfaketime_or_skip();
  if (!faketime) return;

  VendorSim sim;
  Daemon a(skew_daemon_config(*db, sim, "clock-a"));
  Daemon b(skew_daemon_config(*db, sim, "clock-b"));
  shift_wall_clock(b, *faketime, skew);
  a.start();
  b.start();
  INFO("payorchd A log:\n" << a.log_tail() << "\npayorchd B log:\n" << b.log_tail());
  // B's own clock is ahead indeed (its log's ts= is its own wall clock).
  REQUIRE(first_log_time(b) - std::time(nullptr) > std::chrono::seconds(skew - 1min).count());

  sim.add_fault("latency", -1, vendor_delay_ms);
  std::vector<PaymentRequest> reqs;
  for (int i = 0; i < payments; ++i) {
    reqs.push_back({.operation_id = unique_operation_id("clock-skew"), .amount_minor = 100 + i});
    const HttpResponse r = post_payment(i % 2 ? b.port() : a.port(), acme_token, reqs.back());
    REQUIRE_MESSAGE(r.status == 201, r.describe());
  }

  // Until every payment is at rest: in a final state, or waiting for a human on an open case.
  std::map<std::string, boost::json::value> views;
  const auto deadline = std::chrono::steady_clock::now() + scaled(40s);
  while (count_rows(*db,
                    "SELECT count(*) FROM payments p WHERE p.state IN ('SUCCEEDED', 'FAILED_FINAL') "
                    "OR EXISTS (SELECT 1 FROM reconciliation_cases c "
                    "           WHERE c.payment_id = p.id AND c.status = 'open')") < payments &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(250ms);
  for (const auto& req : reqs) views[req.operation_id] = fetch_payment(a.port(), acme_token, req.operation_id);

  const std::map<std::string, std::vector<std::string>> calls = vendor_calls({&a, &b});
  int charged_once = 0;
  int one_submit = 0;
  int succeeded = 0;
  for (const auto& req : reqs) {
    const boost::json::value& view = views[req.operation_id];
    const std::string key = json_string(view, "client_key");
    const std::string id = json_string(view, "id");
    const auto it = calls.find(id);
    const std::vector<std::string> history = it == calls.end() ? std::vector<std::string>{} : it->second;
    std::string described;
    for (const auto& c : history) described += c + " ";
    INFO(req.operation_id << " " << id << " state " << json_string(view, "state") << ", calls: " << described);
    charged_once += sim.count_charges(key) == 1;
    // One POST /v1/charges for the key at the vendor, one call in payorch's logs: the submit of
    // the first claim. A second claim (fence 2) would mean a lease taken over.
    one_submit += sim.charge_requests_logged(key) == 1 && history == std::vector<std::string>{"submit@1"};
    succeeded += json_string(view, "state") == "SUCCEEDED";
    CHECK(ledger_mismatch(view, sim) == "");
  }
  CHECK(succeeded == payments);
  CHECK(charged_once == payments);
  CHECK(one_submit == payments);
  CHECK(count_rows(*db, "SELECT count(*) FROM payments WHERE fence <> 1") == 0);
  {
    store::pg::Connection conn(db->url());
    INFO("cases by reason: "
         << conn.exec("SELECT coalesce(string_agg(reason || ' x' || n, ', '), '') FROM "
                      "(SELECT reason, count(*) AS n FROM reconciliation_cases GROUP BY reason) r")
                .text(0, 0));
    CHECK(count_rows(*db, "SELECT count(*) FROM reconciliation_cases") == 0);
  }
  // Both nodes did some of the work.
  CHECK(!vendor_calls({&a}).empty());
  CHECK(!vendor_calls({&b}).empty());
}

}  // namespace payorch::test
