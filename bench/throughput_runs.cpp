// The modes of payorch-bench-throughput on SQLite: live, single, pending and terminal (the
// nodes mode is in nodes_runs.cpp). Each mode is one session (throughput_session.h); the demo
// vendor is one process shared by the live modes and the nodes mode.
#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "bench/cpu_meter.h"
#include "bench/daemon_config.h"
#include "bench/daemon_process.h"
#include "bench/http_load.h"
#include "bench/seed.h"
#include "bench/throughput.h"
#include "bench/throughput_session.h"

namespace payorch::bench {
namespace {

using namespace std::chrono_literals;

// The reads of the terminal mode are compared with reads of a database this small.
constexpr std::int64_t reference_terminal = 10'000;

// A spread of `pool` rows picked by `ticket`, the same in every run (reads land all over the
// table, not on the hot end).
std::int64_t scattered(std::int64_t ticket, std::int64_t pool) {
  const std::uint64_t h = static_cast<std::uint64_t>(ticket + 1) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::int64_t>((h >> 11) % static_cast<std::uint64_t>(pool));
}

// GETs of seeded payments, scattered over the seeded rows.
Result reads(const SuiteOptions& o, const Session& s, const std::string& name, const SeedSpec& seed) {
  std::fprintf(stderr, "payorch-bench-throughput: %s ...\n", name.c_str());
  Result r;
  r.name = name;
  r.concurrency = o.concurrency;
  LoadPlan plan = load_plan(o, s, o.concurrency, o.reads, 200);
  plan.call = [prefix = seed.operation_prefix, pool = s.seeded](std::int64_t ticket) {
    return read_call(seeded_operation_id(prefix, scattered(ticket, pool)));
  };
  drive_load(plan, s.daemons(), r);
  return r;
}

std::string ms_text(std::chrono::milliseconds latency) {
  return std::to_string(latency.count()) + " ms";
}

void run_live(const SuiteOptions& o, const DaemonProcess& vendor_process, std::uint16_t vendor_port,
              SuiteResults& out) {
  const std::string vendor = "vendor " + ms_text(o.vendor_latency);
  if (o.modes.contains("live")) {
    Result in, e2e;
    in.name = "intake c=" + std::to_string(o.concurrency) + ", engine live (" + vendor + ")";
    e2e.name = "end to end c=" + std::to_string(o.concurrency) + ": first POST to all SUCCEEDED";
    CpuUse in_cpu, e2e_cpu;
    Session s;
    guarded(in, [&] {
      start(s, o, "live", loopback_url(vendor_port));
      CpuMeter meter(cpu_parts(s, vendor_process));
      live_phase(o, s, "live-", meter, in, e2e, in_cpu, e2e_cpu);
      out.live_intake_cpu = in_cpu;
      out.live_e2e_cpu = e2e_cpu;
      stop(s, in.ok, {&in, &e2e});
    });
    finish(s, o, {&in, &e2e});
    out.live_intake = std::move(in);
    out.end_to_end = std::move(e2e);
  }
  if (o.modes.contains("single")) {
    Result in;
    in.name = "intake c=1, engine live (" + vendor + ")";
    Session s;
    guarded(in, [&] {
      start(s, o, "single", loopback_url(vendor_port));
      in = intake(o, s, in.name, 1, o.single_requests, "single-");
      stop(s, in.ok, {&in});
    });
    finish(s, o, {&in});
    out.live_single = std::move(in);
  }
}

// Finished payments, as a month of traffic leaves them.
SeedSpec terminal_seed(std::int64_t count) {
  SeedSpec seed;
  seed.count = count;
  seed.mix = {{SeedKind::succeeded, 19}, {SeedKind::failed_final, 1}};
  seed.currencies = {"EUR", "USD", "GBP"};
  seed.spread = std::chrono::hours(24 * 30);
  return seed;
}

// Vendor down throughout: the engine's submits are refused and retried, so seeded pending
// payments stay pending and keep the engine busy. Reads run first in their session, while the
// engine has nothing due, so that they measure the lookup and not the engine's retries.
void run_scale(const SuiteOptions& o, SuiteResults& out) {
  const std::string down = loopback_url(closed_loopback_port());
  const std::string c = "c=" + std::to_string(o.concurrency);
  {
    Result in;
    in.name = "intake " + c + ", empty database, vendor down";
    Session s;
    guarded(in, [&] {
      start(s, o, "empty", down);
      in = intake(o, s, in.name, o.concurrency, o.requests, "empty-");
      stop(s, in.ok, {&in});
    });
    finish(s, o, {&in});
    out.empty_intake = std::move(in);
  }
  if (o.modes.contains("pending")) {
    SeedSpec seed;
    seed.count = o.pending;
    seed.mix = {{SeedKind::processing, 9}, {SeedKind::in_flight, 1}};
    seed.currencies = {"EUR", "USD", "GBP"};
    Result in;
    in.name = "intake " + c + ", " + std::to_string(o.pending) + " pending, vendor down";
    Session s;
    guarded(in, [&] {
      start(s, o, "pending", down, seed, &out.pending_seed_seconds);
      in = intake(o, s, in.name, o.concurrency, o.requests, "pending-run-");
      stop(s, in.ok, {&in});
    });
    finish(s, o, {&in});
    out.pending_intake = std::move(in);
  }
  if (o.modes.contains("terminal")) {
    {
      const SeedSpec seed = terminal_seed(std::min(o.terminal, reference_terminal));
      Result rd;
      rd.name = "GET " + c + ", " + std::to_string(seed.count) + " terminal, vendor down";
      Session s;
      guarded(rd, [&] {
        start(s, o, "reference", down, seed);
        rd = reads(o, s, rd.name, seed);
        stop(s, 0, {&rd});
      });
      finish(s, o, {&rd});
      out.reference_reads = std::move(rd);
    }
    const SeedSpec seed = terminal_seed(o.terminal);
    Result in, rd;
    in.name = "intake " + c + ", " + std::to_string(o.terminal) + " terminal, vendor down";
    rd.name = "GET " + c + ", " + std::to_string(o.terminal) + " terminal, vendor down";
    Session s;
    guarded(in, [&] {
      start(s, o, "terminal", down, seed, &out.terminal_seed_seconds);
      rd = reads(o, s, rd.name, seed);
      in = intake(o, s, in.name, o.concurrency, o.requests, "terminal-run-");
      stop(s, in.ok, {&in, &rd});
    });
    finish(s, o, {&in, &rd});
    out.terminal_intake = std::move(in);
    out.terminal_reads = std::move(rd);
  }
}

}  // namespace

std::vector<const Result*> SuiteResults::all() const {
  std::vector<const Result*> v{&baseline_single, &baseline_batched};
  auto add = [&v](std::initializer_list<const std::optional<Result>*> results) {
    for (const auto* r : results)
      if (*r) v.push_back(&**r);
  };
  add({&pg_baseline_single, &pg_baseline_batched, &pgbench, &live_intake, &end_to_end});
  for (const NodesRun& run : nodes) v.insert(v.end(), {&run.intake, &run.end_to_end});
  add({&live_single, &empty_intake, &reference_reads, &pending_intake, &terminal_intake,
       &terminal_reads});
  return v;
}

bool SuiteResults::ok() const {
  if (!failures.empty()) return false;
  for (const Result* r : all())
    if (!r->failures.empty()) return false;
  return true;
}

SuiteResults run_suite(const SuiteOptions& o) {
  SuiteResults out;
  const Options base = run_dir_options(o);
  std::fprintf(stderr, "payorch-bench-throughput: baseline, one commit per row ...\n");
  out.baseline_single = run_baseline(base, 1);
  std::fprintf(stderr, "payorch-bench-throughput: baseline, %d rows per commit ...\n", o.batch_rows);
  out.baseline_batched = run_baseline(base, o.batch_rows);

  if (o.modes.contains("live") || o.modes.contains("single") || o.modes.contains("nodes")) {
    std::string vendor_dir;
    Result vendor_run;  // the demo vendor's own failures: they keep its directory
    try {
      std::uint16_t vendor_port = 0;
      std::unique_ptr<DaemonProcess> vendor = start_vendor(o, vendor_dir, vendor_port);
      run_live(o, *vendor, vendor_port, out);
      if (o.modes.contains("nodes")) run_nodes(o, *vendor, vendor_port, out);
      const std::string ended = vendor->terminate(10s);
      if (ended != "exited with code 0") vendor_run.failures.push_back("payorch-vendor-sim " + ended);
    } catch (const std::exception& e) {
      vendor_run.failures.push_back(std::string("demo vendor: ") + e.what());
    }
    if (!vendor_dir.empty()) finish_run_dir(vendor_dir, base, vendor_run);
    out.failures.insert(out.failures.end(), vendor_run.failures.begin(), vendor_run.failures.end());
  }
  if (o.modes.contains("pending") || o.modes.contains("terminal")) run_scale(o, out);
  return out;
}

}  // namespace payorch::bench
