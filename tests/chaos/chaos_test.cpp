// Chaos with real processes (docs/contract.md §3 invariants 2, 3, 4, 6, 7, 8): payorchd and
// payorch-vendor-sim run as child processes; several client threads send a mixed load (new
// intents across two tenants, replays, conflicting reuses, reads; sources the sim declines or
// holds pending) while the sim injects faults from a seeded schedule (fail_before_commit,
// commit_then_5xx, commit_then_hang, delayed_commit, latency; duplicate and late callbacks;
// lookups switched off) and payorchd is killed with SIGKILL at the end of every round and
// started again on the same database. The sim (the external vendor, whose ledger is durable) is
// killed and restarted too in some rounds.
// At the end the faults stop, payorchd is left to settle (bounded), and the checker of
// chaos_checker.h compares the clients' record, payorchd's database and the vendor's ledger.
// chaos_run.h runs the load and the rounds; chaos_postgres_test.cpp runs the same on
// PostgreSQL with several nodes.
//
// The suite runs a short configuration; tools/chaos runs the same test with bigger numbers
// through PAYORCH_CHAOS_* (chaos_plan.h). Every run prints its seed; PAYORCH_CHAOS_SEED=<seed>
// replays the same plan (the interleaving with process timing differs).
#include <doctest/doctest.h>

#include <iostream>

#include "chaos/chaos_checker.h"
#include "chaos/chaos_plan.h"
#include "chaos/chaos_run.h"
#include "chaos/chaos_setup.h"
#include "chaos/chaos_vendor.h"
#include "support/daemon.h"
#include "support/sqlite_probe.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace payorch::chaos;

TEST_CASE("chaos: payorchd killed -9 again and again under load and vendor faults loses nothing") {
  const Params params = Params::from_environment();
  const std::vector<Round> rounds = plan_rounds(params);
  std::cout << "chaos plan: " << params.describe() << std::endl;
  INFO("chaos plan: " << params.describe() << " (rerun with PAYORCH_CHAOS_SEED=" << params.seed << ")");

  const std::vector<std::uint16_t> ports = fixed_ports(2);
  const std::uint16_t daemon_port = ports[0];
  VendorSim sim(chaos_sim_args(ports[1], daemon_port));
  DaemonConfig config = chaos_daemon_config(sim, daemon_port);
  config.engine = "engine: {workers: 8, lease: 3s, poll_interval: 100ms}";
  Daemon daemon(config);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(6000) << "\nsim log:\n" << sim.log_tail(2000));

  const auto records = sqlite_records(daemon.db_path());
  const auto ledger = sqlite_records(sim.db_path());
  SimVendor vendor(sim);
  Target target{.vendor = &vendor, .nodes = {&daemon}, .payorch = records.get(), .ledger = ledger.get()};
  Tally tally;
  const ClientHistory history = run(params, rounds, target, tally);
  const Report checked = check(history, *records, *ledger);

  // Invariant 8 after every kill: the kept exposure equals a recount of the payments, checked
  // by the operator's own command beside the running daemon (and by the checker's figure_drift).
  const CommandResult exposure = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  const std::string block =
      report("chaos report", params, tally, history, checked, count_lines(daemon.log_path(), "level=error"),
             "exposure      payorchd check-exposure: " + exposure_verdict(exposure.output) + "\n");
  std::cout << block << std::flush;

  CHECK(tally.kills == params.kills);
  CHECK(checked.acknowledged > 0);
  CHECK(checked.refunds_acknowledged > 0);
  CHECK_MESSAGE(checked.passed(), block);
  // The processes are still up after everything: payorchd did not die on its own.
  CHECK(daemon.running());
  CHECK(sim.running());
  CHECK(SqliteProbe(daemon.db_path()).integrity_check() == "ok");
  INFO("payorchd check-exposure:\n" << exposure.output);
  CHECK(exposure.status.exited);
  CHECK(exposure.status.code == 0);
  CHECK(exposure.output.find("exposure ok") != std::string::npos);
}
