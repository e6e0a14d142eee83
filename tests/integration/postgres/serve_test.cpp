// payorchd serving from PostgreSQL (docs/postgres.md): the real daemon, one or several on one
// database of the test cluster, beside the real payorch-vendor-sim. What holds on SQLite holds
// here across nodes: a payment is charged at most once (docs/contract.md §3 invariant 2), a node
// frozen past its lease has its late write refused by the fence (invariant 5), and while the
// database is down nothing is acknowledged that is then lost: intake answers 503, /readyz turns
// 503, and both come back on their own once the server does.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/connection.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/log_audit.h"
#include "support/payorch_api.h"
#include "support/ports.h"
#include "support/postgres_cluster.h"
#include "support/slowdown.h"
#include "support/vendor_sim.h"
#include "support/webhook_receiver.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

// A payorchd on `db` with node id `node`, beside `sim`: the engine tests' fast settings.
DaemonConfig postgres_daemon_config(const PostgresDatabase& db, const VendorSim& sim,
                                    const std::string& node) {
  DaemonConfig config = engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}});
  config.database = "database: {driver: postgres, url: \"" + db.url() + "\", pool_size: 4}";
  config.engine = "engine: {node_id: " + node + ", workers: 4, lease: 3s, poll_interval: 100ms}";
  return config;
}

// One column of the payment's row, read beside the daemons ("" for NULL).
std::string payment_column(const PostgresDatabase& db, const std::string& payment_id,
                           const std::string& column) {
  store::pg::Connection conn(db.url());
  const store::pg::Result r =
      conn.exec("SELECT " + column + "::text FROM payments WHERE id = $1", {payment_id});
  return r.rows() == 1 ? r.text(0, 0) : "";
}

std::int64_t count_events(const PostgresDatabase& db, const std::string& payment_id,
                          const std::string& type) {
  store::pg::Connection conn(db.url());
  return conn.exec("SELECT COUNT(*) FROM outbox WHERE payment_id = $1 AND type = $2",
                   {payment_id, type})
      .integer(0, 0);
}

// The payment ids of the engine.vendor_call lines in a daemon's log.
std::set<std::string> called_payments(const std::string& log_path) {
  std::set<std::string> ids;
  const std::string log = read_file(log_path);
  std::size_t at = 0;
  while ((at = log.find(" event=engine.vendor_call ", at)) != std::string::npos) {
    const std::size_t bol = log.rfind('\n', at) + 1;
    const std::size_t eol = log.find('\n', at);
    const std::string line = log.substr(bol, eol - bol);
    const std::size_t id = line.find(" payment_id=");
    if (id != std::string::npos) {
      const std::size_t start = id + 12;
      ids.insert(line.substr(start, line.find(' ', start) - start));
    }
    at = eol == std::string::npos ? log.size() : eol;
  }
  return ids;
}

unsigned readyz(std::uint16_t port) { return http_request(port, "GET", "/readyz").status; }

// Two daemons, pg-a and pg-b, on `db` beside one vendor sim, started; `tweak` may change each
// one's configuration first.
struct TwoNodes {
  explicit TwoNodes(const PostgresDatabase& db,
                    const std::function<void(DaemonConfig&)>& tweak = [](DaemonConfig&) {})
      : a(configured(db, "pg-a", tweak)), b(configured(db, "pg-b", tweak)) {
    a.start();
    b.start();
  }
  DaemonConfig configured(const PostgresDatabase& db, const std::string& node,
                          const std::function<void(DaemonConfig&)>& tweak) {
    DaemonConfig c = postgres_daemon_config(db, sim, node);
    tweak(c);
    return c;
  }
  std::string logs() const {
    return "payorchd A log:\n" + a.log_tail() + "\npayorchd B log:\n" + b.log_tail();
  }
  VendorSim sim;
  Daemon a;
  Daemon b;
};

}  // namespace

TEST_CASE("postgres serve: a payment end to end, its replay, /readyz, /status and check-exposure") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  VendorSim sim;
  Daemon daemon(postgres_daemon_config(*db, sim, "pg-one"));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  CHECK(readyz(daemon.port()) == 200);
  const PaymentRequest req{.operation_id = unique_operation_id("pg-e2e")};
  const HttpResponse created = post_payment(daemon.port(), acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const HttpResponse replay = post_payment(daemon.port(), acme_token, req);
  CHECK(replay.status == 200);
  CHECK(replay.header("Idempotent-Replayed") == "true");
  CHECK(json_string(replay.json(), "id") == json_string(created.json(), "id"));

  const auto done = wait_for_state(daemon.port(), acme_token, req.operation_id, "SUCCEEDED", scaled(10s));
  REQUIRE(json_string(done, "state") == "SUCCEEDED");
  CHECK(sim.count_charges(json_string(done, "client_key")) == 1);
  CHECK(ledger_mismatch(done, sim) == "");
  const std::string payment_id = json_string(done, "id");
  CHECK(count_events(*db, payment_id, "payment.succeeded") == 1);

  const HttpResponse status = http_request(daemon.port(), "GET", "/status");
  REQUIRE(status.status == 200);
  const boost::json::value body = status.json();
  CHECK(body.at("node").at("id").as_string() == "pg-one");
  CHECK(body.at("payments").at("SUCCEEDED") == 1);

  const CommandResult check = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  CHECK_MESSAGE(check.status.code == 0, check.output);
  CHECK(check.output.find("exposure ok") != std::string::npos);
  // Drains and stops like on SQLite; the URI's password is in no line it logged.
  const ExitStatus stopped = daemon.terminate();
  CHECK(stopped.exited);
  CHECK(stopped.code == 0);
  CHECK(log_audit::find_secrets(read_file(daemon.log_path()), "payorchd.log").empty());
}

TEST_CASE("postgres serve: two daemons on one database share the work; each payment charged once") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  TwoNodes nodes(*db);
  VendorSim& sim = nodes.sim;
  Daemon& a = nodes.a;
  Daemon& b = nodes.b;
  INFO(nodes.logs());

  // Every vendor call is held a little, so that neither node's four workers take them all.
  sim.add_fault("latency", 1000, 150);
  std::vector<PaymentRequest> reqs;
  for (int i = 0; i < 40; ++i) {
    reqs.push_back({.operation_id = unique_operation_id("pg-two"), .amount_minor = 100 + i});
    const HttpResponse r = post_payment(i % 2 ? b.port() : a.port(), acme_token, reqs.back());
    REQUIRE_MESSAGE(r.status == 201, r.describe());
  }
  std::set<std::string> ids;
  for (const auto& req : reqs) {
    // Each node answers for every payment, whichever took it.
    const auto view = wait_for_state(b.port(), acme_token, req.operation_id, "SUCCEEDED", scaled(30s));
    REQUIRE_MESSAGE(json_string(view, "state") == "SUCCEEDED", req.operation_id);
    CHECK(sim.count_charges(json_string(view, "client_key")) == 1);
    CHECK(ledger_mismatch(view, sim) == "");
    CHECK(count_events(*db, json_string(view, "id"), "payment.succeeded") == 1);
    CHECK(json_string(fetch_payment(a.port(), acme_token, req.operation_id), "state") == "SUCCEEDED");
    ids.insert(json_string(view, "id"));
  }
  const std::set<std::string> by_a = called_payments(a.log_path());
  const std::set<std::string> by_b = called_payments(b.log_path());
  INFO("calls by A: " << by_a.size() << ", by B: " << by_b.size());
  CHECK(!by_a.empty());
  CHECK(!by_b.empty());
  for (const auto& id : ids) CHECK_MESSAGE(by_a.count(id) + by_b.count(id) >= 1, id);
  // Both count the same database.
  const HttpResponse status_a = http_request(a.port(), "GET", "/status");
  const HttpResponse status_b = http_request(b.port(), "GET", "/status");
  const boost::json::value body_a = status_a.json();
  const boost::json::value body_b = status_b.json();
  CHECK(body_a.at("payments") == body_b.at("payments"));
  CHECK(body_a.at("node").at("id").as_string() == "pg-a");
  const CommandResult check = a.run_command({"check-exposure", "--config", a.config_path()});
  CHECK_MESSAGE(check.status.code == 0, check.output);
}

TEST_CASE("postgres serve: a node frozen past its lease cannot overwrite the newer decision") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  VendorSim sim;
  Daemon a(postgres_daemon_config(*db, sim, "pg-a"));
  Daemon b(postgres_daemon_config(*db, sim, "pg-b"));
  a.start();
  INFO("payorchd A log:\n" << a.log_tail() << "\npayorchd B log:\n" << b.log_tail()
                           << "\nsim log:\n" << sim.log_tail());

  // The sim holds the answer to the next charge for 1.5 s.
  sim.add_fault("latency", 1, 1500);
  const PaymentRequest req{.operation_id = unique_operation_id("pg-stale")};
  const HttpResponse created = post_payment(a.port(), acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const std::string payment_id = json_string(created.json(), "id");
  REQUIRE(eventually(
      [&] {
        return payment_column(*db, payment_id, "lease_owner").rfind("pg-a:", 0) == 0 &&
               !payment_column(*db, payment_id, "last_submit_started_at").empty() &&
               sim.control("GET", "/_sim/faults").json().as_object().at("faults").as_array().empty();
      },
      scaled(3s)));
  const std::int64_t fence_a = std::stoll(payment_column(*db, payment_id, "fence"));

  // A's submit is at the vendor and A holds no transaction: freeze it past its 3 s lease.
  REQUIRE(::kill(a.pid(), SIGSTOP) == 0);
  b.start();
  const auto decided = wait_for_state(b.port(), acme_token, req.operation_id, "SUCCEEDED", scaled(10s));
  REQUIRE(json_string(decided, "state") == "SUCCEEDED");
  // B took the payment over once A's lease had lapsed: a claim of its own, a higher fence.
  const std::int64_t fence_b = std::stoll(payment_column(*db, payment_id, "fence"));
  CHECK(fence_b > fence_a);

  // A thaws; its outcome write meets B's fence and is refused.
  REQUIRE(::kill(a.pid(), SIGCONT) == 0);
  CHECK(eventually(
      [&] {
        const std::string log = read_file(a.log_path());
        return log.find("event=engine.cas_refused") != std::string::npos &&
               log.find("result=stale_fence") != std::string::npos;
      },
      scaled(5s)));
  std::this_thread::sleep_for(300ms);
  CHECK(a.running());
  const auto final_view = fetch_payment(a.port(), acme_token, req.operation_id);
  CHECK(json_string(final_view, "state") == "SUCCEEDED");
  CHECK(json_string(final_view, "vendor_reference") == json_string(decided, "vendor_reference"));
  CHECK(std::stoll(payment_column(*db, payment_id, "fence")) == fence_b);
  CHECK(count_events(*db, payment_id, "payment.succeeded") == 1);
  CHECK(sim.count_charges(json_string(final_view, "client_key")) == 1);
}

TEST_CASE("postgres serve: the database restarts under load: 503 meanwhile, nothing acknowledged lost") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  TwoNodes nodes(*db);
  VendorSim& sim = nodes.sim;
  Daemon& a = nodes.a;
  Daemon& b = nodes.b;
  INFO(nodes.logs());

  // Intakes on both nodes before, during and after the outage; every 201 must survive it.
  std::vector<PaymentRequest> acknowledged;
  std::map<unsigned, int> answers;
  auto post_some = [&](int n) {
    for (int i = 0; i < n; ++i) {
      PaymentRequest req{.operation_id = unique_operation_id("pg-restart")};
      const HttpResponse r = post_payment(i % 2 ? b.port() : a.port(), acme_token, req);
      ++answers[r.status];
      if (r.status == 201) acknowledged.push_back(req);
      else CHECK_MESSAGE(r.status == 503, r.describe());
    }
  };
  post_some(10);
  db->cluster().stop_server();
  post_some(6);
  CHECK(answers[503] >= 1);
  CHECK(eventually([&] { return readyz(a.port()) == 503 && readyz(b.port()) == 503; }, scaled(5s)));
  db->cluster().start_server();
  // Both come back on their own: reconnect with backoff (at most 5 s apart).
  CHECK(eventually([&] { return readyz(a.port()) == 200 && readyz(b.port()) == 200; }, scaled(15s)));
  post_some(10);
  INFO("answers: 201 x" << answers[201] << ", 503 x" << answers[503]);
  CHECK(acknowledged.size() >= 20);

  for (const auto& req : acknowledged) {
    const auto view = wait_for_payment(
        a.port(), acme_token, req.operation_id, [](const auto& v) { return is_settled(v); }, scaled(30s));
    REQUIRE_MESSAGE(!view.is_null(), "acknowledged and lost: " << req.operation_id);
    CHECK_MESSAGE(json_string(view, "state") == "SUCCEEDED", req.operation_id);
    CHECK(sim.count_charges(json_string(view, "client_key")) <= 1);
    CHECK(ledger_mismatch(view, sim) == "");
  }
}

TEST_CASE("postgres serve: Prefer: wait on one node answers a payment another node decided") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  VendorSim sim;
  // A cannot reach the vendor (nothing listens at its base_url: every call is refused before
  // anything is sent, and its breaker opens); B reaches it. So B decides what A was asked.
  const RefusingPort nobody;
  DaemonConfig config_a = postgres_daemon_config(*db, sim, "pg-a");
  config_a.providers = providers_yaml(
      {{.base_url = "http://127.0.0.1:" + std::to_string(nobody.port()), .retry = roomy_retry}});
  Daemon a(config_a);
  Daemon b(postgres_daemon_config(*db, sim, "pg-b"));
  a.start();
  b.start();
  INFO("payorchd A log:\n" << a.log_tail() << "\npayorchd B log:\n" << b.log_tail());

  const PaymentRequest req{.operation_id = unique_operation_id("pg-wait")};
  const auto asked = std::chrono::steady_clock::now();
  const HttpResponse r = post_payment(a.port(), acme_token, req, {{"Prefer", "wait=20"}});
  const auto waited = std::chrono::steady_clock::now() - asked;
  REQUIRE_MESSAGE(r.status == 201, r.describe());
  CHECK(json_string(r.json(), "state") == "SUCCEEDED");
  // Answered when B's decision was committed, not at the deadline.
  CHECK(waited < 15s);
  CHECK(sim.count_charges(json_string(r.json(), "client_key")) == 1);
}

TEST_CASE("postgres serve: two daemons push each event to the tenant's webhook once") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  WebhookReceiver receiver;
  // Answers are held a little, so that both nodes poll while pushes are in flight.
  receiver.delay_answers(100ms);
  TwoNodes nodes(*db, [&](DaemonConfig& c) {
    c.tenants =
        "tenants:\n"
        "  - id: acme\n"
        "    token: \"acme-token-123\"\n"
        "    webhook: {url: \"" + receiver.url() + "\", secret: \"acme-webhook-secret\","
        " timeout: 3s, initial_backoff: 100ms, max_backoff: 500ms}\n"
        "  - {id: globex, token: \"globex-token-123\"}";
  });
  Daemon& a = nodes.a;
  Daemon& b = nodes.b;
  INFO(nodes.logs());

  std::vector<PaymentRequest> reqs;
  for (int i = 0; i < 20; ++i) {
    reqs.push_back({.operation_id = unique_operation_id("pg-push")});
    const HttpResponse r = post_payment(i % 2 ? b.port() : a.port(), acme_token, reqs.back());
    REQUIRE_MESSAGE(r.status == 201, r.describe());
  }
  for (const auto& req : reqs)
    REQUIRE(json_string(wait_for_state(a.port(), acme_token, req.operation_id, "SUCCEEDED", scaled(20s)),
                        "state") == "SUCCEEDED");
  // payment.created and payment.succeeded for each (and nothing else on this happy path).
  REQUIRE(eventually([&] { return receiver.received().size() >= 40; }, scaled(20s)));
  std::this_thread::sleep_for(1s);  // a second push of any event would have arrived by now
  std::map<std::string, int> pushes;
  for (const auto& w : receiver.received()) ++pushes[w.header("payorch-event-id")];
  INFO("pushes: " << receiver.received().size() << " of " << pushes.size() << " events");
  CHECK(pushes.size() == 40);
  for (const auto& push : pushes)
    CHECK_MESSAGE(push.second == 1, push.first << " pushed " << push.second << " times");
  store::pg::Connection conn(db->url());
  CHECK(conn.exec("SELECT COUNT(*) FROM outbox WHERE delivered_at IS NULL AND tenant_id = 'acme'")
            .integer(0, 0) == 0);
}

}  // namespace payorch::test
