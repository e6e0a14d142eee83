// A failover to a synchronous standby under load (docs/high-availability.md): a primary and its
// synchronous standby (tools/pg-cluster standby: synchronous_commit = on,
// synchronous_standby_names naming the standby), two payorchd nodes on one multi-host URI
// (`…@primary,standby/payorch?target_session_attrs=read-write`) beside payorch-vendor-sim, and
// clients posting intakes to both. The primary's postmaster is killed with SIGKILL, the standby
// promoted a second later, as a failover manager would; the nodes find the new primary through
// the URI on their own. Meanwhile intake answers 503 (never 500), /readyz 503; both come back.
//
// Then, against the new primary: every acknowledged intake is there (synchronous commit: the
// standby had flushed each one before its 201), nothing is charged twice, no terminal state
// changed, every payment ends terminal or in a case, and the kept figures equal a recount (the
// chaos checker, chaos_checker.h, and `payorchd check-exposure`). Each request that got no
// answer (503 or a transport error) is retried with its key: exactly one payment each.
//
// The old primary's folder is left behind, killed, and never started again: promoting the
// standby fenced it (tools/pg-cluster refuses to start it). Started as a primary, it would take
// the nodes' commits whenever it answered first in the URI's list: two databases, two charges
// for one operation_id (docs/high-availability.md §6). A real failover manager must fence it the
// same way, and it may only come back as a standby of the new primary, rebuilt.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chaos/chaos_checker.h"
#include "store/postgres/connection.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/log_audit.h"
#include "support/payorch_api.h"
#include "support/postgres_cluster.h"
#include "support/slowdown.h"
#include "support/vendor_sim.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// A payorchd on `url` with node id `node`, beside `sim`: the engine tests' fast settings.
DaemonConfig failover_daemon_config(const std::string& url, const VendorSim& sim, const std::string& node) {
  DaemonConfig config = engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}});
  config.database = "database: {driver: postgres, url: \"" + url + "\", pool_size: 4}";
  config.engine = "engine: {node_id: " + node + ", workers: 4, lease: 3s, poll_interval: 100ms}";
  return config;
}

chaos::Intent intent_of(const PaymentRequest& req) {
  return {"acme", req.operation_id, req.amount_minor, req.currency, req.payee, req.source};
}

// One intake request and how it was answered.
struct Sent {
  PaymentRequest request;
  unsigned status = 0;  // 0: no answer (transport error)
  Clock::time_point sent_at = {}, answered_at = {};
  std::string described = {};  // the 2xx body, else the answer for a failure message
  bool refusal_ok = false;      // no answer, or a 503 storage-unavailable/-busy with Retry-After
};

// What the clients sent and what the nodes answered, shared by the client threads.
class Intake {
public:
  void record(Sent sent) {
    const std::lock_guard lock(mu_);
    sent_.push_back(std::move(sent));
  }
  std::vector<Sent> all() {
    const std::lock_guard lock(mu_);
    return sent_;
  }

private:
  std::mutex mu_;
  std::vector<Sent> sent_;
};

// /readyz of one node: when it first answered otherwise than 200 after the failure, and when
// it next answered 200; and any status that was neither 200 nor 503.
struct Readiness {
  std::optional<Clock::time_point> down, up;
  std::vector<unsigned> unexpected;
};

// The load's threads, stopped and joined however the test case ends.
class Threads {
public:
  explicit Threads(std::atomic<bool>& stop) : stop_(stop) {}
  ~Threads() { join(); }
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;
  template <class F>
  void start(F&& f) {
    threads_.emplace_back(std::forward<F>(f));
  }
  void join() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

private:
  std::atomic<bool>& stop_;
  std::vector<std::thread> threads_;
};

}  // namespace

TEST_CASE("postgres failover: primary killed -9 under load, synchronous standby promoted: "
          "nothing acknowledged lost, nothing charged twice") {
  auto servers = replicated_postgres_or_skip();
  if (!servers) return;
  PostgresCluster& primary = *servers->primary;
  PostgresCluster& standby = *servers->standby;
  const auto test_start = Clock::now();

  // Synchronous replication is really on, before any load.
  REQUIRE(primary.admin("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'")
              .text(0, 0) == "sync");
  const std::string url = multi_host_url({&primary, &standby}, "payorch",
                                         "target_session_attrs=read-write&connect_timeout=3");
  {
    store::pg::Connection session(url);
    CHECK(session.exec("SHOW synchronous_commit").text(0, 0) == "on");
    CHECK(session.exec("SELECT inet_server_port()::text").text(0, 0) ==
          primary.host_port().substr(primary.host_port().find(':') + 1));
  }

  VendorSim sim;
  Daemon a(failover_daemon_config(url, sim, "pg-a"));
  Daemon b(failover_daemon_config(url, sim, "pg-b"));
  a.start();
  b.start();
  INFO("payorchd A log:\n" << a.log_tail() << "\npayorchd B log:\n" << b.log_tail());
  // Every charge is held 100 ms, so that vendor calls are in flight when the primary dies: their
  // outcomes cannot be written, and claims on the new primary recover them by key.
  sim.add_fault("latency", -1, 100);

  // The load: three clients, each posting new intakes in turn to both nodes, no retry; the
  // requests that got no answer are retried at the end. And /readyz of both nodes, every 50 ms.
  Intake intake;
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::mutex readiness_mu;
  Readiness ready_a, ready_b;
  const auto both_up = [&] {
    const std::lock_guard lock(readiness_mu);
    return ready_a.up.has_value() && ready_b.up.has_value();
  };
  Threads load(stop);
  for (int c = 0; c < 3; ++c) {
    load.start([&, c] {
      for (int i = 0; !stop.load(); ++i) {
        Sent sent{.request = {.operation_id = unique_operation_id("pg-failover"),
                              .amount_minor = 100 + i % 50}};
        sent.sent_at = Clock::now();
        const HttpResponse r = post_payment((i + c) % 2 ? b.port() : a.port(), acme_token, sent.request);
        sent.answered_at = Clock::now();
        sent.status = r.status;
        sent.described = r.status == 201 || r.status == 200 ? r.body : r.describe();
        // A refusal says why, and that the same key may be sent again.
        sent.refusal_ok = r.status == 0 || ((is_problem(r, 503, "storage-unavailable") ||
                                             is_problem(r, 503, "storage-busy")) &&
                                            r.header("Retry-After") == "1");
        intake.record(std::move(sent));
        std::this_thread::sleep_for(25ms);
      }
    });
  }
  load.start([&] {
    while (!stop.load()) {
      for (int n = 0; n < 2; ++n) {
        const std::uint16_t port = n == 0 ? a.port() : b.port();
        const unsigned status = http_request(port, "GET", "/readyz", {}, {}, 5s).status;
        const auto now = Clock::now();
        const std::lock_guard lock(readiness_mu);
        Readiness& r = n == 0 ? ready_a : ready_b;
        if (status != 200 && status != 503) r.unexpected.push_back(status);
        if (failed.load() && !r.down && status != 200) r.down = now;
        if (r.down && !r.up && status == 200) r.up = now;
      }
      std::this_thread::sleep_for(50ms);
    }
  });

  std::this_thread::sleep_for(2s);
  // Terminal states before the failover, read on the primary. A commit is visible there as soon
  // as it is written locally, before the standby confirmed it; the kill comes 200 ms later, by
  // when every such commit has been confirmed (and acknowledged).
  std::map<std::string, std::string> terminal_before;
  {
    store::pg::Connection session(primary.url());
    const store::pg::Result r =
        session.exec("SELECT operation_id, state FROM payments WHERE state IN ('SUCCEEDED', 'FAILED_FINAL')");
    for (int i = 0; i < r.rows(); ++i) terminal_before[r.text(i, 0)] = r.text(i, 1);
  }
  std::this_thread::sleep_for(200ms);
  failed = true;
  primary.kill_server();
  // The postmaster is gone: no commit is acknowledged after this (a backend waiting for the
  // standby's confirmation exits without answering once the postmaster is dead), so any 201
  // to a request sent from now on was committed by the new primary.
  const auto killed_at = Clock::now();
  // A failover manager's detection time, then the promotion.
  std::this_thread::sleep_for(1s);
  const auto promote_started = Clock::now();
  standby.promote();
  const auto promoted_at = Clock::now();
  // Both nodes come back on their own: the URI's second host is now the primary.
  const bool back = eventually(both_up, scaled(20s));
  // Some more load on the new primary.
  std::this_thread::sleep_for(1500ms);
  load.join();
  REQUIRE_MESSAGE(back, "the nodes did not become ready again after the promotion");
  CHECK(ready_a.unexpected.empty());
  CHECK(ready_b.unexpected.empty());

  // The answers: 201 (or 200), else 503 or no answer; never anything else.
  const std::vector<Sent> sent = intake.all();
  chaos::ClientHistory history;
  std::vector<const Sent*> unanswered;
  std::map<unsigned, int> answers;
  std::optional<Clock::time_point> last_ack_before, first_ack_after, first_refused, last_refused;
  int acknowledged_after_promotion = 0;
  for (const Sent& s : sent) {
    ++answers[s.status];
    history.sent.emplace(chaos::ClientHistory::key("acme", s.request.operation_id), intent_of(s.request));
    if (s.status == 201 || s.status == 200) {
      const boost::json::value view = boost::json::parse(s.described);
      history.acknowledged.emplace(chaos::ClientHistory::key("acme", s.request.operation_id),
                                   chaos::Acknowledgement{.intent = intent_of(s.request),
                                                          .payment_id = json_string(view, "id"),
                                                          .client_key = json_string(view, "client_key")});
      if (s.sent_at < killed_at && (!last_ack_before || s.answered_at > *last_ack_before))
        last_ack_before = s.answered_at;
      if (s.sent_at > killed_at && (!first_ack_after || s.answered_at < *first_ack_after))
        first_ack_after = s.answered_at;
      if (s.sent_at > promoted_at) ++acknowledged_after_promotion;
    } else {
      CHECK_MESSAGE(s.refusal_ok, s.described);
      unanswered.push_back(&s);
      if (!first_refused || s.answered_at < *first_refused) first_refused = s.answered_at;
      if (!last_refused || s.answered_at > *last_refused) last_refused = s.answered_at;
    }
  }
  REQUIRE(first_ack_after);
  CHECK(answers[503] >= 1);
  CHECK(acknowledged_after_promotion >= 1);

  // Every request without an answer, again with its key: one payment each (201 if it was never
  // committed, 200 if its COMMIT had gone through unanswered).
  int retried_created = 0, retried_replayed = 0;
  store::pg::Connection new_primary(standby.url());
  for (const Sent* s : unanswered) {
    HttpResponse r;
    for (int attempt = 0; attempt < 10; ++attempt) {
      r = post_payment(attempt % 2 ? b.port() : a.port(), acme_token, s->request);
      if (r.status != 503 && r.status != 0) break;
      std::this_thread::sleep_for(200ms);
    }
    REQUIRE_MESSAGE((r.status == 201 || r.status == 200), s->request.operation_id << ": " << r.describe());
    ++(r.status == 201 ? retried_created : retried_replayed);
    const boost::json::value view = r.json();
    history.acknowledged.emplace(chaos::ClientHistory::key("acme", s->request.operation_id),
                                 chaos::Acknowledgement{.intent = intent_of(s->request),
                                                        .payment_id = json_string(view, "id"),
                                                        .client_key = json_string(view, "client_key")});
    const std::int64_t payments =
        new_primary
            .exec("SELECT count(*) FROM payments WHERE tenant_id = 'acme' AND operation_id = $1",
                  {s->request.operation_id})
            .integer(0, 0);
    CHECK_MESSAGE(payments == 1, s->request.operation_id);
  }

  // The engine finishes: every payment terminal or in a case, every charge settled.
  const auto records = chaos::postgres_records(standby.url());
  const auto ledger = chaos::sqlite_records(sim.db_path());
  const auto settle_start = Clock::now();
  CHECK(eventually([&] { return chaos::unsettled(*records, *ledger) == 0; }, scaled(30s)));
  const auto settled_at = Clock::now();

  // No terminal state of before the failover changed (the checker compares them with what is
  // stored, and with the events).
  for (const auto& entry : terminal_before)
    history.terminal_seen[chaos::ClientHistory::key("acme", entry.first)].push_back(entry.second);
  const chaos::Report checked = chaos::check(history, *records, *ledger);
  const CommandResult exposure = a.run_command({"check-exposure", "--config", a.config_path()});

  // The figures, in seconds from the kill.
  const auto since_kill = [&](const std::optional<Clock::time_point>& t) {
    std::ostringstream out;
    out.precision(2);
    out << std::fixed << std::showpos;
    if (t) out << seconds_between(killed_at, *t) << " s";
    else out << "never";
    return out.str();
  };
  std::ostringstream figures;
  figures << "failover: intakes " << sent.size() << ": 201 x" << answers[201] << ", 200 x" << answers[200]
          << ", 503 x" << answers[503] << ", no answer x" << answers[0] << " (201 after the promotion x"
          << acknowledged_after_promotion << "); retried with their keys " << unanswered.size()
          << ": 201 x" << retried_created << ", 200 x" << retried_replayed << "\n"
          << "failover: from the kill: promotion asked " << since_kill(promote_started) << ", done "
          << since_kill(promoted_at) << "; last 201 to a request sent before it "
          << since_kill(last_ack_before) << "; intake refused "
          << since_kill(first_refused) << " to " << since_kill(last_refused)
          << "; first 201 on the new primary " << since_kill(first_ack_after) << "; /readyz 503 "
          << since_kill(ready_a.down) << " to " << since_kill(ready_a.up) << " (pg-a), "
          << since_kill(ready_b.down) << " to " << since_kill(ready_b.up) << " (pg-b)\n"
          << "failover: settled in " << seconds_between(settle_start, settled_at) << " s; test "
          << seconds_between(test_start, Clock::now()) << " s; checker " << checked.counts() << "\n";
  for (const auto& problem : checked.problems) figures << "  " << problem << "\n";
  std::cout << figures.str() << std::flush;

  CHECK(checked.acknowledged >= 20);
  CHECK_MESSAGE(checked.passed(), figures.str());
  CHECK(checked.lost == 0);
  CHECK(checked.duplicated == 0);
  CHECK(checked.terminal_changed == 0);
  CHECK(checked.stuck == 0);
  CHECK(checked.figure_drift == 0);
  INFO("payorchd check-exposure:\n" << exposure.output);
  CHECK(exposure.status.code == 0);
  CHECK(exposure.output.find("exposure ok") != std::string::npos);
  CHECK(a.running());
  CHECK(b.running());
  // libpq's messages about each host of the URI reached the logs; the password did not.
  CHECK(log_audit::find_secrets(read_file(a.log_path()), "payorchd A log").empty());
  CHECK(log_audit::find_secrets(read_file(b.log_path()), "payorchd B log").empty());

  // The old primary stays down: starting it now would make a second primary.
  CHECK_THROWS_WITH_AS(primary.start_server(), doctest::Contains("split brain"), std::runtime_error);
}

}  // namespace payorch::test
