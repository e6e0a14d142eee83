// A vendor that cannot be reached (connection refused: certainly not sent, docs/contract.md §3) with
// thousands of payments due: the per-provider circuit breaker opens, the daemon probes the
// vendor with one call at a time at a bounded rate instead of a retry storm, and once the vendor
// answers again every payment is charged exactly once. Also `payorchd check-exposure`, the
// operator's recount of the kept risk exposure (invariant 8).
#include <doctest/doctest.h>

#include <boost/json/object.hpp>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/database.h"
#include "store/intake.h"
#include "store/postgres/migrations.h"
#include "store/postgres/pg_store.h"
#include "store/sqlite.h"
#include "store/sqlite_store.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/payorch_api.h"
#include "support/prometheus.h"
#include "support/slowdown.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"
#include "support/vendor_sim.h"

using namespace payorch;
using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// Breaker settings of these tests: opens after 5 consecutive not-sent calls, one probe per
// 500 ms. 32 workers: a storm, if there were one, would be hundreds of calls per second.
constexpr const char* breaker_engine_yaml =
    "engine: {workers: 32, lease: 3s, poll_interval: 100ms, breaker: {failures: 5, probe_interval: 500ms}}";

// Writes `n` due payments of tenant acme (provider sim, tok_ok) through the store's own intake,
// in one transaction, into the daemon's database before it starts: the backlog a vendor outage
// leaves. Returns their operation ids.
std::vector<std::string> seed_due_payments(const Daemon& daemon, int n, const std::string& prefix) {
  const UnixMillis now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  SeededRandom rng(static_cast<std::uint64_t>(now));
  std::vector<store::IntakeRequest> requests;
  for (int i = 0; i < n; ++i) requests.push_back(test::intake_request(unique_operation_id(prefix), 100 + i));
  const auto intake_all = [&](store::Tx& tx) {
    for (const auto& r : requests)
      if (tx.record_intake(r, now - 1'000, rng).kind != store::IntakeOutcome::Kind::created)
        throw std::runtime_error("seed intake not created: " + r.intent.operation_id);
  };
  JobResult seeded;
  if (daemon.database_url().empty()) {
    store::prepare_database(daemon.db_path(), now);
    store::Db db(daemon.db_path(), store::Db::Mode::read_write);
    store::Transaction tx(db);
    store::SqliteTx sqlite_tx(db);
    intake_all(sqlite_tx);
    tx.commit();
    seeded.status = store::WriteStatus::committed;
  } else {
    store::pg::prepare_database(daemon.database_url(), now);
    store::pg::PgStore pg(store::pg::PgStoreOptions{.url = daemon.database_url(), .pool_size = 1, .threads = 1});
    seeded = run_job(pg, intake_all);
  }
  REQUIRE_MESSAGE(seeded.status == store::WriteStatus::committed, seeded.error);
  std::vector<std::string> ids;
  for (const auto& r : requests) ids.push_back(r.intent.operation_id);
  return ids;
}

struct Health {
  std::string breaker;
  std::string last_error;
};

Health sim_health(std::uint16_t port) {
  const HttpResponse r = http_request(port, "GET", "/status");
  if (r.status != 200) return {};
  const boost::json::value body = r.json();
  for (const auto& p : body.as_object().at("providers").as_array()) {
    if (json_string(p, "name") != "sim") continue;
    const auto& o = p.as_object();
    Health h;
    if (const auto* b = o.if_contains("breaker"); b && b->is_string()) h.breaker = std::string(b->as_string());
    if (const auto* e = o.if_contains("last_error"); e && e->is_string()) h.last_error = std::string(e->as_string());
    return h;
  }
  return {};
}

std::map<std::string, double> metrics(std::uint16_t port) {
  const HttpResponse r = http_request(port, "GET", "/metrics");
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  return samples_of(r.body);
}

double not_sent_calls(std::uint16_t port) {
  return sum_of(metrics(port), "payorch_vendor_calls_total", {"provider=\"sim\"", "outcome=\"not_sent\""});
}

std::int64_t payments_in(std::uint16_t port, const std::string& state) {
  const HttpResponse r = http_request(port, "GET", "/status");
  if (r.status != 200) return -1;
  return r.json().as_object().at("payments").as_object().at(state).as_int64();
}

}  // namespace

TEST_CASE("breaker: with the vendor down, thousands of due payments make a bounded trickle of connection attempts") {
  VendorSim sim;
  sim.kill9();  // its port is now closed: every connect is refused, nothing is ever sent
  DaemonConfig config = engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}});
  config.engine = breaker_engine_yaml;
  Daemon daemon(config);
  const auto ids = seed_due_payments(daemon, 3'000, "brk-down");
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));

  REQUIRE(eventually([&] { return sim_health(daemon.port()).breaker == "open"; }, scaled(10s)));
  const Health open = sim_health(daemon.port());
  CHECK(open.last_error.starts_with("not_sent: "));
  auto m = metrics(daemon.port());
  CHECK(sum_of(m, "payorch_vendor_breaker_open", {"provider=\"sim\""}) == 1);
  CHECK(sum_of(m, "payorch_vendor_breaker_opened_total", {"provider=\"sim\""}) >= 1);

  // Over 4 s with every payment due: at most one probe per 500 ms (plus one at each edge), where
  // 32 workers retrying 3,000 payments at a 200 ms–1 s backoff would make hundreds.
  const double before = not_sent_calls(daemon.port());
  const auto started = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(4s);
  const double after = not_sent_calls(daemon.port());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  MESSAGE("not-sent calls while open: " << (after - before) << " in " << seconds << " s");
  CHECK(after - before >= 2);  // it keeps probing
  CHECK(after - before <= seconds / 0.5 + 2);
  CHECK(sim_health(daemon.port()).breaker == "open");

  // Nothing may have reached the vendor: all still PROCESSING, none in a case, and nothing
  // exposed but, at most, the one probe whose connect is being refused right now.
  CHECK(payments_in(daemon.port(), "PROCESSING") == 3'000);
  CHECK(payments_in(daemon.port(), "UNKNOWN") == 0);
  const HttpResponse status = http_request(daemon.port(), "GET", "/status");
  const boost::json::value status_json = status.json();
  std::int64_t exposed = 0;
  for (const auto& e : status_json.as_object().at("unknown_exposure").as_array())
    exposed += e.at("count").as_int64();
  CHECK_MESSAGE(exposed <= 1, status.body);
}

TEST_CASE("breaker: the vendor comes back after the breaker opened: every payment SUCCEEDED, one charge each") {
  VendorSim sim;
  sim.kill9();
  DaemonConfig config = engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}});
  config.engine = breaker_engine_yaml;
  Daemon daemon(config);
  constexpr int n = 400;
  const auto ids = seed_due_payments(daemon, n, "brk-back");
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192) << "\nsim log:\n" << sim.log_tail());
  REQUIRE(eventually([&] { return sim_health(daemon.port()).breaker == "open"; }, scaled(10s)));

  sim.restart_on_same_port();
  // The first probe that is answered closes the breaker; the backlog drains.
  CHECK(eventually([&] { return sim_health(daemon.port()).breaker == "closed"; }, scaled(5s)));
  REQUIRE(eventually([&] { return payments_in(daemon.port(), "SUCCEEDED") == n; }, scaled(60s)));

  std::map<std::string, int> charges;  // reference -> charges in the vendor's ledger
  for (const auto& c : sim.ledger()) ++charges[std::string(c.at("reference").as_string())];
  PayorchRecords records(daemon);
  for (const auto& op : ids) {
    const boost::json::value view = fetch_payment(daemon.port(), acme_token, op);
    REQUIRE(!view.is_null());
    CHECK(json_string(view, "state") == "SUCCEEDED");
    CHECK_MESSAGE(charges[json_string(view, "client_key")] == 1, describe_payment(view, records));
  }
  CHECK(charges.size() == static_cast<std::size_t>(n));
  CHECK(records.repeated_events().empty());

  const CommandResult exposure = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  INFO("check-exposure: " << exposure.output);
  CHECK(exposure.status.exited);
  CHECK(exposure.status.code == 0);
}

TEST_CASE("check-exposure: ok beside a running daemon; a kept figure that differs from the rows is named, exit 1") {
  VendorSim sim;
  sim.add_fault("commit_then_hang", -1, 3000);  // submits commit and hang: payments in flight
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));
  for (int i = 0; i < 3; ++i) {
    const HttpResponse r = post_payment(daemon.port(), acme_token,
                                        PaymentRequest{.operation_id = unique_operation_id("chk-exp"), .amount_minor = 500});
    REQUIRE_MESSAGE(r.status == 201, r.describe());
  }
  REQUIRE(eventually(
      [&] {
        const HttpResponse s = http_request(daemon.port(), "GET", "/status");
        return s.status == 200 && !s.json().as_object().at("unknown_exposure").as_array().empty();
      },
      scaled(5s)));
  const CommandResult ok = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  INFO(ok.output);
  CHECK(ok.status.exited);
  CHECK(ok.status.code == 0);
  CHECK(ok.output.find("sim EUR: ") != std::string::npos);
  CHECK(ok.output.find("exposure ok") != std::string::npos);

  daemon.terminate();
  {
    DatabaseProbe db(daemon, SqliteProbe::Mode::for_writing);
    db.exec("UPDATE exposure SET count = count + 2, amount_minor = amount_minor + 7");
  }
  const CommandResult bad = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  INFO(bad.output);
  CHECK(bad.status.exited);
  CHECK(bad.status.code == 1);
  CHECK(bad.output.find("difference: sim EUR: kept ") != std::string::npos);
  CHECK(bad.output.find("differs from the payments in 1 place(s)") != std::string::npos);
}
