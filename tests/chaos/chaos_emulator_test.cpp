// The chaos run of chaos_test.cpp against the Adyen Checkout emulator instead of
// payorch-vendor-sim: payorchd (provider `adyen`, adapter adyen, recovery: replay) charges
// through tests/emulators/adyen/server.js, run by Node as a child process on a fixed port and
// sending its HMAC-signed webhooks to payorchd's /v1/callbacks/adyen. The load and rounds are
// chaos_run.h's; what differs is the vendor (chaos_vendor.h): the sources are the emulator's
// stored payment methods (authorised, refused, received then authorised by webhook, unknown:
// 422 803), the faults are its modes (fail_before_commit, commit_then_5xx, commit_then_hang,
// delayed_commit), rounds duplicate and reorder its webhook batches or hold them back (they go
// out late), and the emulator is killed -9 and started again on its ledger in some rounds.
// payorchd is killed -9 at the end of every round. The checker of chaos_checker.h judges the
// result unchanged, reading the emulator's ledger (GET /_emu/ledger) through
// emulator_ledger_records.
//
// Needs node and tools/deps (npm ci in tests/emulators); without them the case says so and
// passes, except with CI=true, where it fails (adyen_emulator_missing()).
#include <doctest/doctest.h>

#include <boost/json/value.hpp>

#include <iostream>

#include "chaos/chaos_checker.h"
#include "chaos/chaos_plan.h"
#include "chaos/chaos_run.h"
#include "chaos/chaos_setup.h"
#include "chaos/chaos_vendor.h"
#include "support/adyen_emulator.h"
#include "support/daemon.h"
#include "support/engine_checks.h"
#include "support/sqlite_probe.h"

using namespace payorch::test;
using namespace payorch::chaos;

TEST_CASE("chaos against the Adyen emulator: payorchd killed -9 under emulator faults loses nothing, charges once") {
  if (const std::string missing = adyen_emulator_missing(); !missing.empty()) {
    MESSAGE("skipped: " << missing);
    return;
  }
  // More rounds than the sim's run (whose kills are the suite's defaults): the emulator's run is
  // shorter per round, and two of its rounds restart the emulator.
  const Params params = Params::from_environment(Params{.kills = 8, .sim_kills = 2});
  const VendorProfile& profile = adyen_emulator_profile();
  const std::vector<Round> rounds = plan_rounds(params, profile);
  std::cout << "chaos plan (adyen emulator): " << params.describe() << std::endl;
  INFO("chaos plan: " << params.describe() << " (rerun with PAYORCH_CHAOS_SEED=" << params.seed << ")");

  const std::vector<std::uint16_t> ports = fixed_ports(2);
  const std::uint16_t daemon_port = ports[0];
  const std::string webhook_url = "http://127.0.0.1:" + std::to_string(daemon_port) + "/v1/callbacks/adyen";
  AdyenEmulator emulator({.port = ports[1], .webhook_url = webhook_url});
  Daemon daemon(chaos_adyen_daemon_config(emulator.base_url(), daemon_port));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(6000) << "\nemulator log:\n" << emulator.log_tail());

  const auto records = sqlite_records(daemon.db_path());
  const auto ledger = emulator_ledger_records(emulator);
  AdyenEmulatorVendor vendor(emulator, webhook_url);
  Target target{.vendor = &vendor, .profile = &profile, .provider = "adyen", .nodes = {&daemon},
                .payorch = records.get(), .ledger = ledger.get()};
  Tally tally;
  const ClientHistory history = run(params, rounds, target, tally);
  const Report checked = check(history, *records, *ledger);

  const CommandResult exposure = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  const std::string block =
      report("chaos report (adyen emulator)", params, tally, history, checked,
             count_lines(daemon.log_path(), "level=error"),
             "exposure      payorchd check-exposure: " + exposure_verdict(exposure.output) + "\n", vendor.name());
  std::cout << block << std::flush;

  int planned_vendor_kills = 0;
  for (const Round& round : rounds) planned_vendor_kills += round.kill_sim;
  CHECK(tally.kills == params.kills);
  CHECK(tally.sim_restarts == planned_vendor_kills);
  CHECK(tally.control_errors == 0);
  CHECK(checked.acknowledged > 0);
  CHECK(checked.charges > 0);  // the emulator, not something else, took the payments
  CHECK(checked.refunds_acknowledged > 0);
  CHECK_MESSAGE(checked.passed(), block);
  CHECK(daemon.running());
  CHECK(emulator.running());
  CHECK(SqliteProbe(daemon.db_path()).integrity_check() == "ok");
  // payorchd acknowledged every webhook the emulator sent, the late and duplicated ones included.
  CHECK(eventually([&] { return emulator.ledger().at("webhooks").at("pending").as_int64() == 0; },
                   std::chrono::seconds(15)));
  INFO("payorchd check-exposure:\n" << exposure.output);
  CHECK(exposure.status.exited);
  CHECK(exposure.status.code == 0);
  CHECK(exposure.output.find("exposure ok") != std::string::npos);
}
