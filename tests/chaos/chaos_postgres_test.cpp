// Chaos on PostgreSQL (docs/contract.md §3 invariants 2, 3, 4, 6, 8 across nodes): three
// payorchd on one database of the test cluster (support/postgres_cluster.h) share the work by
// lease and fence, beside payorch-vendor-sim with its seeded faults. Clients spread their
// requests over the nodes and retry a transport error or a 503 on the next node; at the end of
// every round one node, chosen by the seed, is killed with SIGKILL and started again; in the
// middle of the run the database server itself stops (sessions cut, transactions rolled back)
// and starts again on the same port. The sim calls back to the first node (one callback URL),
// whose restarts the sim's retries ride out.
// Then the same checker as on SQLite (chaos_checker.h), reading the database through
// PostgreSQL, and `payorchd check-exposure` on one node.
//
// ctest runs these cases as `chaos_postgres` (label postgres): skipped where PostgreSQL cannot
// start, failed instead with CI=true. `tools/chaos --postgres` runs the first one bigger.
#include <doctest/doctest.h>

#include <iostream>
#include <memory>

#include "chaos/chaos_checker.h"
#include "chaos/chaos_plan.h"
#include "chaos/chaos_run.h"
#include "chaos/chaos_setup.h"
#include "chaos/chaos_vendor.h"
#include "support/daemon.h"
#include "support/postgres_cluster.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace payorch::chaos;

namespace {

// The suite's run: short, with one database restart in the middle.
Params postgres_defaults() {
  Params p;
  p.kills = 6;
  p.round_ms = 1500;
  p.clients = 4;
  p.sim_kills = 1;
  p.nodes = 3;
  p.database_restarts = 1;
  return p;
}

// Node `i` of the run: its own dir and port, the shared database, node id chaos-<i>.
DaemonConfig node_config(const VendorSim& sim, std::uint16_t port, const PostgresDatabase& db, int i) {
  DaemonConfig config = chaos_daemon_config(sim, port);
  config.database = "database: {driver: postgres, url: \"" + db.url() + "\", pool_size: 6}";
  config.engine = "engine: {node_id: chaos-" + std::to_string(i) +
                  ", workers: 4, lease: 3s, poll_interval: 100ms}";
  return config;
}

std::string log_tails(const std::vector<std::unique_ptr<Daemon>>& nodes, std::size_t bytes) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    out += "payorchd chaos-" + std::to_string(i) + " log:\n" + nodes[i]->log_tail(bytes) + "\n";
  return out;
}

}  // namespace

TEST_CASE("chaos on PostgreSQL: several payorchd on one database, killed -9 in turn, the database restarted, lose nothing") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  const Params params = Params::from_environment(postgres_defaults());
  const std::vector<Round> rounds = plan_rounds(params);
  std::cout << "chaos plan: " << params.describe() << std::endl;
  INFO("chaos plan: " << params.describe() << " (rerun with PAYORCH_CHAOS_SEED=" << params.seed << ")");

  const std::vector<std::uint16_t> ports = fixed_ports(params.nodes + 1);
  VendorSim sim(chaos_sim_args(ports.back(), ports.front()));
  std::vector<std::unique_ptr<Daemon>> nodes;
  for (int i = 0; i < params.nodes; ++i)
    nodes.push_back(std::make_unique<Daemon>(node_config(sim, ports[static_cast<std::size_t>(i)], *db, i)));
  for (auto& node : nodes) node->start();
  INFO(log_tails(nodes, 3000) << "sim log:\n" << sim.log_tail(2000));

  const auto records = postgres_records(db->url());
  const auto ledger = sqlite_records(sim.db_path());
  SimVendor vendor(sim);
  Target target{.vendor = &vendor, .database = &db->cluster(), .payorch = records.get(), .ledger = ledger.get()};
  for (auto& node : nodes) target.nodes.push_back(node.get());
  Tally tally;
  const ClientHistory history = run(params, rounds, target, tally);
  const Report checked = check(history, *records, *ledger);

  const CommandResult exposure = nodes[0]->run_command({"check-exposure", "--config", nodes[0]->config_path()});
  std::int64_t error_lines = 0;
  for (const auto& node : nodes) error_lines += count_lines(node->log_path(), "level=error");
  const std::string block =
      report("chaos report (PostgreSQL)", params, tally, history, checked, error_lines,
             "exposure      payorchd check-exposure: " + exposure_verdict(exposure.output) + "\n");
  std::cout << block << std::flush;

  CHECK(tally.kills == params.kills);
  CHECK(tally.database_restarts == std::min(params.database_restarts, params.kills));
  CHECK(checked.acknowledged > 0);
  CHECK(checked.refunds_acknowledged > 0);
  CHECK_MESSAGE(checked.passed(), block);
  // Every node is still up after everything: none died on its own, not at the database's
  // restart either.
  for (auto& node : nodes) CHECK(node->running());
  CHECK(sim.running());
  INFO("payorchd check-exposure:\n" << exposure.output);
  CHECK(exposure.status.exited);
  CHECK(exposure.status.code == 0);
  CHECK(exposure.output.find("exposure ok") != std::string::npos);
}
