#include "chaos/chaos_run.h"

#include <boost/json/value.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/postgres_cluster.h"
#include "support/process.h"
#include "support/slowdown.h"

namespace payorch::chaos {
namespace {

using namespace payorch::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// How long a client keeps retrying one request (transport failures, 503) before it gives up
// on it: longer than a node's restart and than the database's.
constexpr auto give_up_after = 6s;

std::string_view token_of(const std::string& tenant) {
  return tenant == "acme" ? acme_token : globex_token;
}

PaymentRequest to_request(const Intent& i) {
  return PaymentRequest{.operation_id = i.operation_id, .amount_minor = i.amount_minor,
                        .currency = i.currency, .payee = i.payee, .source = i.source};
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The clients' shared record (ClientHistory) behind a mutex.
class SharedHistory {
public:
  explicit SharedHistory(std::string provider) : provider_(std::move(provider)) {}
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
    const std::string diff = view_mismatch(view, to_request(i), "", provider_);
    if (!diff.empty()) violation(scope + ": the " + std::to_string(response.status) + " view differs: " + diff);
    observed(scope, view);
    std::lock_guard lock(mu_);
    auto [it, inserted] = history_.acknowledged.emplace(scope, ack);
    if (inserted) return;
    if (it->second.payment_id != ack.payment_id || it->second.client_key != ack.client_key)
      history_.contract_violations.push_back(scope + ": acknowledged as " + it->second.payment_id +
                                             " and later as " + ack.payment_id);
    if (response.status == 201)
      history_.contract_violations.push_back(scope + ": a second 201 (a replay must answer 200)");
  }
  void refund_sent(const RefundIntent& r) {
    std::lock_guard lock(mu_);
    history_.refunds_sent.emplace(ClientHistory::key(r.tenant, r.operation_id), r);
  }
  // A 2xx for refund `r`: the first is kept; any later one must name the same refund.
  void refund_acknowledged(const RefundIntent& r, const HttpResponse& response) {
    const std::string scope = ClientHistory::key(r.tenant, r.operation_id);
    boost::json::value view;
    try {
      view = response.json();
    } catch (const std::exception&) {
      return violation(scope + ": 2xx without a JSON body: " + response.describe());
    }
    const RefundAcknowledgement ack{.intent = r, .refund_id = json_string(view, "id"),
                                    .client_key = json_string(view, "client_key")};
    std::lock_guard lock(mu_);
    auto [it, inserted] = history_.refunds_acknowledged.emplace(scope, ack);
    if (inserted) return;
    if (it->second.refund_id != ack.refund_id)
      history_.contract_violations.push_back(scope + ": refund acknowledged as " + it->second.refund_id +
                                             " and later as " + ack.refund_id);
  }
  // A payment view a 2xx showed: its state, when terminal, is kept for the checker.
  void observed(const std::string& scope, const boost::json::value& view) {
    const std::string state = json_string(view, "state");
    if (!is_terminal_state(state)) return;
    std::lock_guard lock(mu_);
    auto& seen = history_.terminal_seen[scope];
    if (std::find(seen.begin(), seen.end(), state) == seen.end()) seen.push_back(state);
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
  const std::string provider_;
  std::mutex mu_;
  ClientHistory history_;
  std::map<std::string, std::int64_t> answers_;
};

// One client thread: its seeded action stream, each request sent to a seeded node and retried
// with the same key through kills and 503s (what a well-behaved client does), on the next node
// each time, until answered, given up on, or stopped.
void run_client(int client, const Params& params, const VendorProfile& vendor,
                const std::vector<std::uint16_t>& ports, const std::atomic<bool>& stop, SharedHistory& shared) {
  ClientPlan plan(params.seed, client, vendor);
  std::vector<Intent> created;
  std::vector<std::unique_ptr<HttpConnection>> connections(ports.size());
  const int nodes = static_cast<int>(ports.size());
  while (!stop.load()) {
    const Action action = plan.next();
    int node = plan.next_node(nodes);
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
    const RefundIntent refund{intent.tenant, intent.operation_id, action.refund_operation_id,
                              action.refund_amount_minor};
    if (action.kind == Action::Kind::refund) shared.refund_sent(refund);
    const std::string refund_body = R"({"operation_id":")" + refund.operation_id + R"(","amount_minor":)" +
                                    std::to_string(refund.amount_minor) + "}";

    HttpResponse response;
    for (const auto deadline = Clock::now() + give_up_after; !stop.load() && Clock::now() < deadline;
         node = (node + 1) % nodes) {
      auto& connection = connections[static_cast<std::size_t>(node)];
      if (!connection || !connection->is_open())
        connection = std::make_unique<HttpConnection>(ports[static_cast<std::size_t>(node)], 3s);
      shared.request();
      // A refund is retried with its key through kills and 503s, as a payment is.
      response = action.kind == Action::Kind::read
                     ? connection->request("GET", "/v1/payments/" + intent.operation_id,
                                           {{"Authorization", "Bearer " + std::string(token_of(intent.tenant))}})
                 : action.kind == Action::Kind::refund
                     ? connection->request("POST", "/v1/payments/" + intent.operation_id + "/refunds",
                                           tenant_headers(token_of(intent.tenant)), refund_body)
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
    static constexpr const char* kinds[] = {"new", "replay", "conflicting reuse", "read", "refund"};
    shared.answered(std::string(kinds[static_cast<int>(action.kind)]) + " " +
                    std::to_string(response.status));

    if (action.kind == Action::Kind::refund) {
      const std::string refund_scope = ClientHistory::key(refund.tenant, refund.operation_id);
      if (response.status == 201 || response.status == 200) {
        shared.refund_acknowledged(refund, response);
      } else if (response.status == 404) {
        if (shared.is_acknowledged(intent)) shared.violation(refund_scope + ": a refund of an acknowledged payment answered 404");
      } else if (!is_problem(response, 409, "payment-not-refundable") &&
                 !is_problem(response, 422, "refund-exceeds-payment")) {
        shared.violation(refund_scope + ": a refund was answered " + response.describe());
      }
    } else if (action.kind == Action::Kind::read) {
      if (response.status == 404 && shared.is_acknowledged(intent)) {
        shared.violation(scope + ": acknowledged, then GET answered 404");
      } else if (response.status == 200) {
        try {
          shared.observed(scope, response.json());
        } catch (const std::exception&) {
          shared.violation(scope + ": GET answered 200 without a JSON body");
        }
      } else if (response.status != 404) {
        shared.violation(scope + ": GET answered " + response.describe());
      }
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

// One round: its vendor switches and faults at their moments, the database's restart at its
// moment, then kill -9 of its node (and of the vendor), a pause, and the node started again.
void run_round(const Round& round, Target& target, Tally& tally) {
  Vendor& vendor = *target.vendor;
  const auto round_start = Clock::now();
  try {
    vendor.apply(round);
  } catch (const std::exception&) {
    ++tally.control_errors;
  }
  bool database_restarted = !round.database_restart || target.database == nullptr;
  const auto restart_database_if_due = [&](int before_ms) {
    if (database_restarted || round.database_restart->at_ms > before_ms) return;
    std::this_thread::sleep_until(round_start + std::chrono::milliseconds(round.database_restart->at_ms));
    const auto stopped_at = Clock::now();
    target.database->stop_server();
    std::this_thread::sleep_for(std::chrono::milliseconds(round.database_restart->down_ms));
    target.database->start_server();
    tally.database_down_s += seconds_since(stopped_at);
    ++tally.database_restarts;
    database_restarted = true;
  };
  for (const PlannedFault& fault : round.faults) {
    restart_database_if_due(fault.at_ms);
    std::this_thread::sleep_until(round_start + std::chrono::milliseconds(fault.at_ms));
    try {
      vendor.add_fault(fault);
      ++tally.faults_queued;
    } catch (const std::exception&) {
      ++tally.control_errors;
    }
  }
  restart_database_if_due(round.duration_ms);
  std::this_thread::sleep_until(round_start + std::chrono::milliseconds(round.duration_ms));
  const auto node = static_cast<std::size_t>(round.kill_node) % target.nodes.size();
  target.nodes[node]->kill9();
  ++tally.kills;
  ++tally.kills_per_node[node];
  if (round.kill_sim) {
    vendor.restart();  // kill -9, then the same ledger, port and arguments
    ++tally.sim_restarts;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(round.downtime_ms));
  target.nodes[node]->start();
  ++tally.restarts;
}

// Payments and charges not settled yet; a database that cannot be read counts as unsettled.
std::int64_t unsettled_now(const Target& target) {
  try {
    return unsettled(*target.payorch, *target.ledger);
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

ClientHistory run(const Params& params, const std::vector<Round>& rounds, Target& target, Tally& tally) {
  if (target.nodes.empty() || target.vendor == nullptr || target.profile == nullptr ||
      target.payorch == nullptr || target.ledger == nullptr)
    throw std::logic_error("chaos::run: a target needs nodes, a vendor, its profile and both record sources");
  std::vector<std::uint16_t> ports;
  for (const Daemon* node : target.nodes) ports.push_back(node->port());
  tally.kills_per_node.assign(target.nodes.size(), 0);

  SharedHistory shared(target.provider);
  std::atomic<bool> stop{false};
  {
    std::vector<std::jthread> clients;
    for (int c = 0; c < params.clients; ++c)
      clients.emplace_back([&, c] { run_client(c, params, *target.profile, ports, stop, shared); });
    // Destroyed before `clients`: if a round throws, the clients stop and the joins return.
    struct StopOnExit {
      std::atomic<bool>& stop;
      ~StopOnExit() { stop = true; }
    } stop_on_exit{stop};

    const auto started = Clock::now();
    for (const Round& round : rounds) run_round(round, target, tally);
    tally.load_s = seconds_since(started);
  }  // stops and joins the clients

  // Faults off, callbacks on and single; then wait (bounded) for every payment to be terminal
  // or in front of a human, and for the vendor's pending charges to settle.
  target.vendor->calm();
  const auto settle_start = Clock::now();
  tally.unsettled_at_end = unsettled_now(target);
  eventually([&] { return unsettled_now(target) == 0; }, scaled(std::chrono::seconds(params.settle_s)));
  tally.settle_s = seconds_since(settle_start);

  tally.answers = shared.answers();
  return shared.snapshot();
}

std::string report(const std::string& title, const Params& params, const Tally& tally,
                   const ClientHistory& history, const Report& checked, std::int64_t error_lines,
                   const std::string& extra, const std::string& vendor) {
  std::string open_cases;
  for (const auto& [reason, n] : checked.open_cases_by_reason)
    open_cases += (open_cases.empty() ? "" : ", ") + reason + " " + std::to_string(n);
  if (open_cases.empty()) open_cases = "none";
  const bool several = params.nodes > 1 || params.database_restarts > 0;
  std::string per_node;
  for (const int n : tally.kills_per_node) per_node += (per_node.empty() ? "" : ", ") + std::to_string(n);

  std::ostringstream line;
  line << "chaos seed=" << params.seed << " kills=" << tally.kills << " restarts=" << tally.restarts
       << " sim_restarts=" << tally.sim_restarts;
  if (several)
    line << " nodes=" << params.nodes << " database_restarts=" << tally.database_restarts;
  line << " faults=" << tally.faults_queued << " requests=" << history.requests << " " << checked.counts();

  std::ostringstream block;
  block << "==== " << title << " ====\n"
        << "plan          " << params.describe() << "\n"
        << "processes     payorchd kill -9 x" << tally.kills;
  if (several) block << " (per node: " << per_node << ")";
  block << ", restarts " << tally.restarts << "; " << vendor << " kill -9 x" << tally.sim_restarts;
  if (several)
    block << "; database restarts " << tally.database_restarts << " (down "
          << static_cast<int>(tally.database_down_s * 10) / 10.0 << " s in all)";
  block << "\n"
        << "load          " << history.requests << " requests from " << params.clients
        << " clients in " << static_cast<int>(tally.load_s) << " s, " << tally.faults_queued
        << " vendor faults queued (" << tally.control_errors << " control calls failed)\n"
        << "answers       " << tally.answers << "\n"
        << "settled in    " << static_cast<int>(tally.settle_s * 10) / 10.0 << " s ("
        << tally.unsettled_at_end << " payments or charges unsettled when the load stopped)\n"
        << "intents       sent " << history.sent.size() << ", acknowledged " << checked.acknowledged
        << ", stored " << checked.payments << " (succeeded " << checked.succeeded
        << ", failed_final " << checked.failed_final << ", escalated " << checked.escalated << ")\n"
        << "refunds       sent " << history.refunds_sent.size() << ", acknowledged "
        << checked.refunds_acknowledged << ", stored " << checked.refunds << "\n"
        << "vendor        " << checked.charges << " charges, " << checked.vendor_refunds << " refunds\n"
        << "invariants    lost=" << checked.lost << " duplicated=" << checked.duplicated
        << " unexpected=" << checked.unexpected << " phantom=" << checked.phantom
        << " stuck=" << checked.stuck << " mismatched=" << checked.mismatched
        << " outbox_violations=" << checked.outbox_violations
        << " terminal_changed=" << checked.terminal_changed << " figure_drift=" << checked.figure_drift
        << " contract_violations=" << checked.contract_violations << " over_refunded=" << checked.over_refunded
        << " early_refunds=" << checked.early_refunds << " deferred_left=" << checked.deferred_left << "\n"
        << "recovery      recovered_unknown=" << checked.recovered_unknown
        << " mismatched_in_case=" << checked.mismatched_in_case
        << " orphan_cases=" << checked.orphan_cases << " payorchd_error_lines=" << error_lines << "\n"
        << "open cases    " << open_cases << "\n"
        << extra;
  for (const std::string& p : checked.problems) block << "problem       " << p << "\n";
  block << "verdict       "
        << (checked.passed() ? "PASS" : "FAIL (rerun with PAYORCH_CHAOS_SEED=" + std::to_string(params.seed) + ")")
        << "\n"
        << line.str() << "\n"
        << "chaos-json {\"seed\":" << params.seed << ",\"kills\":" << tally.kills
        << ",\"restarts\":" << tally.restarts << ",\"sim_restarts\":" << tally.sim_restarts;
  if (several)
    block << ",\"nodes\":" << params.nodes << ",\"database_restarts\":" << tally.database_restarts;
  block << ",\"faults\":" << tally.faults_queued << ",\"requests\":" << history.requests
        << ",\"load_s\":" << static_cast<int>(tally.load_s) << ",\"settle_s\":" << static_cast<int>(tally.settle_s)
        << ",\"report\":" << checked.json() << "}\n";
  return block.str();
}

}  // namespace payorch::chaos
