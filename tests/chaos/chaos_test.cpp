// Chaos with real processes (docs/contract.md §3 invariants 2, 3, 4, 6, 7): payorchd and payorch-vendor-sim
// run as child processes; several client threads send a mixed load (new intents across two
// tenants, replays, conflicting reuses, reads; sources the sim declines or holds pending) while
// the sim injects faults from a seeded schedule (fail_before_commit, commit_then_5xx,
// commit_then_hang, delayed_commit, latency; duplicate and late callbacks; lookups switched
// off) and payorchd is killed with SIGKILL at the end of every round and started again on the
// same database. The sim (the external vendor, whose ledger is durable) is killed and restarted
// too in some rounds.
// At the end the faults stop, payorchd is left to settle (bounded), and the checker of
// chaos_checker.h compares the clients' record, payorchd's database and the vendor's ledger.
//
// The suite runs a short configuration; tools/chaos runs the same test with bigger numbers
// through PAYORCH_CHAOS_* (chaos_plan.h). Every run prints its seed; PAYORCH_CHAOS_SEED=<seed>
// replays the same plan (the interleaving with process timing differs).
#include <doctest/doctest.h>

#include <boost/json/object.hpp>

#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "chaos/chaos_checker.h"
#include "chaos/chaos_plan.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/ports.h"
#include "support/slowdown.h"
#include "support/sqlite_probe.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace payorch::chaos;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Room for long recoveries (lookups until a "not found" is trusted, resubmits, pending charges):
// the aim is that every payment ends terminal; a case is still accepted (and counted).
constexpr const char* chaos_retry =
    "{max_attempts: 30, initial_backoff: 100ms, max_backoff: 1s, give_up_after: 1h}";
// High enough that the faults' UNKNOWNs do not pause intake for the whole run.
constexpr const char* chaos_risk = "{max_unknown_count: 10000, max_unknown_amount_minor: 1000000000000}";
// How long a client keeps retrying one request (transport failures, 503) before it gives up
// on it: longer than a restart.
constexpr auto give_up_after = 6s;

std::string_view token_of(const std::string& tenant) {
  return tenant == "acme" ? acme_token : globex_token;
}

PaymentRequest to_request(const Intent& i) {
  return PaymentRequest{.operation_id = i.operation_id, .amount_minor = i.amount_minor,
                        .currency = i.currency, .payee = i.payee, .source = i.source};
}

// The clients' shared record (chaos_checker.h's ClientHistory) behind a mutex.
class SharedHistory {
public:
  void sent(const Intent& i) {
    std::lock_guard lock(mu_);
    history_.sent.emplace(ClientHistory::key(i.tenant, i.operation_id), i);
  }
  bool is_acknowledged(const Intent& i) {
    std::lock_guard lock(mu_);
    return history_.acknowledged.count(ClientHistory::key(i.tenant, i.operation_id)) > 0;
  }
  void request() {
    std::lock_guard lock(mu_);
    ++history_.requests;
  }
  void violation(std::string what) {
    std::lock_guard lock(mu_);
    history_.contract_violations.push_back(std::move(what));
  }
  // A 2xx for intent `i` (never a conflicting reuse): the first is kept; any later one must name
  // the same payment.
  void acknowledged(const Intent& i, const HttpResponse& response) {
    const std::string scope = ClientHistory::key(i.tenant, i.operation_id);
    boost::json::value view;
    try {
      view = response.json();
    } catch (const std::exception&) {
      return violation(scope + ": 2xx without a JSON body: " + response.describe());
    }
    Acknowledgement ack{.intent = i, .payment_id = json_string(view, "id"),
                        .client_key = json_string(view, "client_key")};
    const std::string diff = view_mismatch(view, to_request(i), "");
    if (!diff.empty()) violation(scope + ": the " + std::to_string(response.status) + " view differs: " + diff);
    std::lock_guard lock(mu_);
    auto [it, inserted] = history_.acknowledged.emplace(scope, ack);
    if (inserted) return;
    if (it->second.payment_id != ack.payment_id || it->second.client_key != ack.client_key)
      history_.contract_violations.push_back(scope + ": acknowledged as " + it->second.payment_id +
                                             " and later as " + ack.payment_id);
    if (response.status == 201)
      history_.contract_violations.push_back(scope + ": a second 201 (a replay must answer 200)");
  }
  // How requests were answered, by kind ("201", "200 replay", "422 conflict", "gave up", ...).
  void answered(const std::string& what) {
    std::lock_guard lock(mu_);
    ++answers_[what];
  }
  std::string answers() {
    std::lock_guard lock(mu_);
    std::string out;
    for (const auto& [what, n] : answers_) out += (out.empty() ? "" : ", ") + what + " " + std::to_string(n);
    return out;
  }
  ClientHistory snapshot() {
    std::lock_guard lock(mu_);
    return history_;
  }

private:
  std::mutex mu_;
  ClientHistory history_;
  std::map<std::string, std::int64_t> answers_;
};

// One client thread: its seeded action stream, each request retried with the same key through
// kills and 503s (what a well-behaved client does) until answered, given up on, or stopped.
void run_client(int client, const Params& params, std::uint16_t port, const std::atomic<bool>& stop,
                SharedHistory& shared) {
  ClientPlan plan(params.seed, client);
  std::vector<Intent> created;
  std::unique_ptr<HttpConnection> connection;
  while (!stop.load()) {
    const Action action = plan.next();
    std::this_thread::sleep_for(std::chrono::milliseconds(action.pause_ms));
    Intent intent;
    bool conflicting = false;
    if (action.kind == Action::Kind::new_payment) {
      intent = {action.tenant, action.operation_id, action.amount_minor, action.currency,
                action.payee, action.source};
      created.push_back(intent);
      shared.sent(intent);
    } else {
      intent = created.at(action.target);
      // Only an acknowledged intent can be reused conflictingly: otherwise the "conflict" might
      // be the first request payorchd records, which is no conflict at all.
      conflicting = action.kind == Action::Kind::conflicting_reuse && shared.is_acknowledged(intent);
    }
    PaymentRequest request = to_request(intent);
    if (conflicting) request.amount_minor += 1;
    const std::string scope = ClientHistory::key(intent.tenant, intent.operation_id);

    HttpResponse response;
    for (const auto deadline = Clock::now() + give_up_after; !stop.load() && Clock::now() < deadline;) {
      if (!connection || !connection->is_open()) connection = std::make_unique<HttpConnection>(port, 3s);
      shared.request();
      response = action.kind == Action::Kind::read
                     ? connection->request("GET", "/v1/payments/" + intent.operation_id,
                                           {{"Authorization", "Bearer " + std::string(token_of(intent.tenant))}})
                     : post_payment(*connection, token_of(intent.tenant), request);
      if (response.status != 0 && response.status != 503) break;
      if (response.status == 0) connection.reset();
      shared.answered(response.status == 0 ? "transport error (retried)" : "503 (retried)");
      std::this_thread::sleep_for(response.status == 0 ? 25ms : 50ms);
    }
    if (response.status == 0 || response.status == 503) {
      if (!stop.load()) shared.answered("gave up");
      continue;  // its fate stays unknown
    }
    static constexpr const char* kinds[] = {"new", "replay", "conflicting reuse", "read"};
    shared.answered(std::string(kinds[static_cast<int>(action.kind)]) + " " +
                    std::to_string(response.status));

    if (action.kind == Action::Kind::read) {
      if (response.status == 404 && shared.is_acknowledged(intent))
        shared.violation(scope + ": acknowledged, then GET answered 404");
      else if (response.status != 200 && response.status != 404)
        shared.violation(scope + ": GET answered " + response.describe());
    } else if (conflicting) {
      if (!is_problem(response, 422, "idempotency-key-reused"))
        shared.violation(scope + ": a conflicting reuse was answered " + response.describe());
    } else if (response.status == 201 || response.status == 200) {
      shared.acknowledged(intent, response);
    } else {
      shared.violation(scope + ": " + (action.kind == Action::Kind::replay ? "a replay" : "a new intent") +
                       " was answered " + response.describe());
    }
  }
}

// Payments neither terminal nor in an open case, and charges still pending at the vendor.
std::int64_t unsettled(const std::string& payorch_db, const std::string& ledger_db) {
  SqliteProbe db(payorch_db), ledger(ledger_db);
  return db.count("SELECT count(*) FROM payments p WHERE state IN ('PROCESSING', 'UNKNOWN') AND "
                  "NOT EXISTS (SELECT 1 FROM reconciliation_cases c WHERE c.payment_id = p.id "
                  "AND c.status = 'open')") +
         ledger.count("SELECT count(*) FROM charges WHERE status = 'pending'");
}

std::int64_t count_lines(const std::string& path, std::string_view needle) {
  std::istringstream in(read_file(path));
  std::int64_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("chaos: payorchd killed -9 again and again under load and vendor faults loses nothing") {
  const Params params = Params::from_environment();
  const std::vector<Round> rounds = plan_rounds(params);
  std::cout << "chaos plan: " << params.describe() << std::endl;
  INFO("chaos plan: " << params.describe() << " (rerun with PAYORCH_CHAOS_SEED=" << params.seed << ")");

  std::uint16_t daemon_port = 0, sim_port = 0;
  {
    RefusingPort a, b;  // two distinct ports, released before the processes bind them
    daemon_port = a.port();
    sim_port = b.port();
  }
  // Fixed ports: the sim calls back to payorchd across its restarts and payorchd's base_url
  // stays valid across the sim's.
  VendorSim sim({"--listen", "127.0.0.1:" + std::to_string(sim_port), "--callback-url",
                 "http://127.0.0.1:" + std::to_string(daemon_port) + "/v1/callbacks/sim",
                 "--pending-delay", "1s", "--callback-initial-backoff", "200ms",
                 "--callback-max-backoff", "1s", "--callback-timeout", "1s"});
  DaemonConfig config = engine_daemon_config({{.base_url = sim.base_url(),
                                               .timeouts = "{connect: 500ms, request: 2s}",
                                               .retry = chaos_retry,
                                               .risk = chaos_risk}});
  config.engine = "engine: {workers: 8, lease: 3s, poll_interval: 100ms}";
  config.server = "server: {listen: \"127.0.0.1:" + std::to_string(daemon_port) + "\", max_body_bytes: 65536}";
  Daemon daemon(config);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(6000) << "\nsim log:\n" << sim.log_tail(2000));

  SharedHistory shared;
  std::atomic<bool> stop{false};
  std::vector<std::jthread> clients;
  for (int c = 0; c < params.clients; ++c)
    clients.emplace_back([&, c] { run_client(c, params, daemon_port, stop, shared); });
  // Destroyed before `clients`: if a restart throws, the clients stop and the joins return.
  struct StopOnExit {
    std::atomic<bool>& stop;
    ~StopOnExit() { stop = true; }
  } stop_on_exit{stop};

  const auto started = Clock::now();
  int kills = 0, restarts = 0, sim_restarts = 0, faults_queued = 0, control_errors = 0;
  for (const Round& round : rounds) {
    const auto round_start = Clock::now();
    try {
      sim.set_config({{"duplicate_callbacks", round.duplicate_callbacks},
                      {"callbacks_enabled", round.callbacks_enabled},
                      {"lookup_enabled", round.lookup_enabled}});
    } catch (const std::exception&) {
      ++control_errors;
    }
    for (const PlannedFault& fault : round.faults) {
      std::this_thread::sleep_until(round_start + std::chrono::milliseconds(fault.at_ms));
      try {
        sim.add_fault(fault.mode, fault.count, fault.delay_ms);
        ++faults_queued;
      } catch (const std::exception&) {
        ++control_errors;
      }
    }
    std::this_thread::sleep_until(round_start + std::chrono::milliseconds(round.duration_ms));
    daemon.kill9();
    ++kills;
    if (round.kill_sim) {
      sim.restart();  // kill -9, then the same ledger, port and arguments
      ++sim_restarts;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(round.downtime_ms));
    daemon.start();
    ++restarts;
  }
  const double load_s = std::chrono::duration<double>(Clock::now() - started).count();
  stop = true;
  clients.clear();  // joins

  // Faults off, callbacks on and single; then wait (bounded) for every payment to be terminal
  // or in front of a human, and for the vendor's pending charges to settle.
  sim.clear_faults();
  sim.set_config({{"duplicate_callbacks", false}, {"callbacks_enabled", true}, {"lookup_enabled", true}});
  const auto settle_start = Clock::now();
  const std::int64_t unsettled_at_end = unsettled(daemon.db_path(), sim.db_path());
  eventually([&] { return unsettled(daemon.db_path(), sim.db_path()) == 0; },
             scaled(std::chrono::seconds(params.settle_s)));
  const double settle_s = std::chrono::duration<double>(Clock::now() - settle_start).count();

  const ClientHistory history = shared.snapshot();
  const Report report = check(history, daemon.db_path(), sim.db_path());
  const std::int64_t error_lines = count_lines(daemon.log_path(), "level=error");

  std::string open_cases;
  for (const auto& [reason, n] : report.open_cases_by_reason)
    open_cases += (open_cases.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  if (open_cases.empty()) open_cases = "none";
  std::ostringstream line;
  line << "chaos seed=" << params.seed << " kills=" << kills << " restarts=" << restarts
       << " sim_restarts=" << sim_restarts << " faults=" << faults_queued
       << " requests=" << history.requests << " " << report.counts();
  std::ostringstream block;
  block << "==== chaos report ====\n"
        << "plan          " << params.describe() << "\n"
        << "processes     payorchd kill -9 x" << kills << ", restarts " << restarts
        << "; sim kill -9 x" << sim_restarts << "\n"
        << "load          " << history.requests << " requests from " << params.clients
        << " clients in " << static_cast<int>(load_s) << " s, " << faults_queued
        << " vendor faults queued (" << control_errors << " control calls failed)\n"
        << "answers       " << shared.answers() << "\n"
        << "settled in    " << static_cast<int>(settle_s * 10) / 10.0 << " s (" << unsettled_at_end
        << " payments or charges unsettled when the load stopped)\n"
        << "intents       sent " << history.sent.size() << ", acknowledged " << report.acknowledged
        << ", stored " << report.payments << " (succeeded " << report.succeeded
        << ", failed_final " << report.failed_final << ", escalated " << report.escalated << ")\n"
        << "vendor        " << report.charges << " charges\n"
        << "invariants    lost=" << report.lost << " duplicated=" << report.duplicated
        << " unexpected=" << report.unexpected << " phantom=" << report.phantom
        << " stuck=" << report.stuck << " mismatched=" << report.mismatched
        << " outbox_violations=" << report.outbox_violations
        << " contract_violations=" << report.contract_violations << "\n"
        << "recovery      recovered_unknown=" << report.recovered_unknown
        << " mismatched_in_case=" << report.mismatched_in_case
        << " orphan_cases=" << report.orphan_cases << " payorchd_error_lines=" << error_lines << "\n"
        << "open cases    " << open_cases << "\n";
  for (const std::string& p : report.problems) block << "problem       " << p << "\n";
  block << "verdict       " << (report.passed() ? "PASS" : "FAIL (rerun with PAYORCH_CHAOS_SEED=" +
                                                         std::to_string(params.seed) + ")")
        << "\n"
        << line.str() << "\n"
        << "chaos-json {\"seed\":" << params.seed << ",\"kills\":" << kills
        << ",\"restarts\":" << restarts << ",\"sim_restarts\":" << sim_restarts
        << ",\"faults\":" << faults_queued << ",\"requests\":" << history.requests
        << ",\"load_s\":" << static_cast<int>(load_s) << ",\"settle_s\":" << static_cast<int>(settle_s)
        << ",\"report\":" << report.json() << "}\n";
  std::cout << block.str() << std::flush;

  CHECK(kills == params.kills);
  CHECK(report.acknowledged > 0);
  CHECK_MESSAGE(report.passed(), block.str());
  // The processes are still up after everything: payorchd did not die on its own.
  CHECK(daemon.running());
  CHECK(sim.running());
  CHECK(SqliteProbe(daemon.db_path()).integrity_check() == "ok");
  // Invariant 8 after every kill: the kept exposure equals a recount of the payments, checked
  // by the operator's own command beside the running daemon.
  const CommandResult exposure = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  INFO("payorchd check-exposure:\n" << exposure.output);
  CHECK(exposure.status.exited);
  CHECK(exposure.status.code == 0);
  CHECK(exposure.output.find("exposure ok") != std::string::npos);
}
