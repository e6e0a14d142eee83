// One HTTP level: a fresh database and daemon, C keep-alive connections posting intents until
// the level's request count or time cap is reached, then SIGTERM and a row count that must
// equal the 201s received (a 201 promises a durable row).
#include <stdexcept>
#include <string>

#include "bench/daemon_config.h"
#include "bench/daemon_process.h"
#include "bench/http_load.h"
#include "bench/intake_bench.h"

namespace payorch::bench {
namespace {

using namespace std::chrono_literals;

}  // namespace

Result run_http_level(const Options& opts, int concurrency) {
  Result r;
  r.name = "http c=" + std::to_string(concurrency);
  r.concurrency = concurrency;
  const std::string dir = make_run_dir(opts.work_dir, "c" + std::to_string(concurrency));
  const std::string db_path = dir + "/payorch.db";
  try {
    // The vendor is down: the engine's submits are refused and retried, sharing the writer.
    test::write_file(dir + "/payorchd.yaml",
                     daemon_config({db_path, "http://127.0.0.1:" + std::to_string(closed_loopback_port()), 2}));
    DaemonProcess daemon(opts.payorchd, dir + "/payorchd.yaml", dir + "/port",
                         dir + "/payorchd.log");
    LoadPlan plan;
    plan.ports = {daemon.wait_for_port(10s)};
    plan.concurrency = concurrency;
    plan.total = opts.requests;
    plan.warmup = warmup_count(opts.requests);
    plan.deadline = SteadyClock::now() + opts.time_cap;
    const std::string prefix = "bench-c" + std::to_string(concurrency) + "-";
    plan.call = [&prefix](std::int64_t ticket) { return intake_call(prefix + std::to_string(ticket)); };
    drive_load(plan, {&daemon}, r);
    stop_and_check_rows({&daemon}, {db_path}, 0, r.ok, r);
  } catch (const std::exception& e) {
    r.failures.push_back(e.what());
  }
  finish_run_dir(dir, opts, r);
  return r;
}

}  // namespace payorch::bench
