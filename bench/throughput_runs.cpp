// The runs of payorch-bench-throughput. Each mode is one session: a fresh directory and
// database (seeded first where the mode asks), one payorchd, its load phases, its memory, then
// SIGTERM and the row check. The demo vendor is one process shared by the live modes.
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench/daemon_config.h"
#include "bench/daemon_process.h"
#include "bench/http_load.h"
#include "bench/seed.h"
#include "bench/throughput.h"
#include "util/system_clock.h"

namespace payorch::bench {
namespace {

using namespace std::chrono_literals;

constexpr auto start_timeout = 120s;  // a daemon opening a database of 10M rows included
constexpr auto status_poll = 20ms;
// The reads of the terminal mode are compared with reads of a database this small.
constexpr std::int64_t reference_terminal = 10'000;

Options run_dir_options(const SuiteOptions& o) {
  Options b;
  b.requests = o.requests;
  b.time_cap = o.time_cap;
  b.work_dir = o.work_dir;
  b.keep_dirs = o.keep_dirs;
  return b;
}

std::string loopback_url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

// A spread of `pool` rows picked by `ticket`, the same in every run (reads land all over the
// table, not on the hot end).
std::int64_t scattered(std::int64_t ticket, std::int64_t pool) {
  const std::uint64_t h = static_cast<std::uint64_t>(ticket + 1) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::int64_t>((h >> 11) % static_cast<std::uint64_t>(pool));
}

struct Session {
  std::string dir;
  std::string db_path;
  std::int64_t seeded = 0;
  std::unique_ptr<DaemonProcess> daemon;
  std::uint16_t port = 0;
};

// Makes the session's directory, seeds its database if asked (returning the seconds it took
// through `seed_seconds`), and starts payorchd on it.
void start(Session& s, const SuiteOptions& o, const std::string& tag, const std::string& vendor_url,
           const std::optional<SeedSpec>& seed = std::nullopt, double* seed_seconds = nullptr) {
  s.dir = make_run_dir(o.work_dir, tag);
  s.db_path = s.dir + "/payorch.db";
  if (seed) {
    std::fprintf(stderr, "payorch-bench-throughput: seeding %lld payments for %s ...\n",
                 static_cast<long long>(seed->count), tag.c_str());
    const SeedReport rep = seed_payments(s.db_path, *seed, SystemClock().now_ms());
    s.seeded = rep.rows;
    if (seed_seconds != nullptr) *seed_seconds = rep.seconds;
  }
  test::write_file(s.dir + "/payorchd.yaml", daemon_config({s.db_path, vendor_url, o.workers}));
  s.daemon = std::make_unique<DaemonProcess>(o.payorchd, s.dir + "/payorchd.yaml", s.dir + "/port",
                                             s.dir + "/payorchd.log");
  s.port = s.daemon->wait_for_port(start_timeout);
}

LoadPlan load_plan(const SuiteOptions& o, std::uint16_t port, int concurrency, std::int64_t total,
                   unsigned expected_status) {
  LoadPlan plan;
  plan.port = port;
  plan.concurrency = concurrency;
  plan.total = total;
  plan.warmup = warmup_count(total);
  plan.deadline = SteadyClock::now() + o.time_cap;
  plan.expected_status = expected_status;
  return plan;
}

Result intake(const SuiteOptions& o, const Session& s, const std::string& name, int concurrency,
              std::int64_t total, const std::string& prefix) {
  std::fprintf(stderr, "payorch-bench-throughput: %s ...\n", name.c_str());
  Result r;
  r.name = name;
  r.concurrency = concurrency;
  LoadPlan plan = load_plan(o, s.port, concurrency, total, 201);
  plan.call = [prefix](std::int64_t ticket) { return intake_call(prefix + std::to_string(ticket)); };
  drive_load(plan, *s.daemon, r);
  return r;
}

// GETs of seeded payments, scattered over the seeded rows.
Result reads(const SuiteOptions& o, const Session& s, const std::string& name, const SeedSpec& seed) {
  std::fprintf(stderr, "payorch-bench-throughput: %s ...\n", name.c_str());
  Result r;
  r.name = name;
  r.concurrency = o.concurrency;
  LoadPlan plan = load_plan(o, s.port, o.concurrency, o.reads, 200);
  plan.call = [prefix = seed.operation_prefix, pool = s.seeded](std::int64_t ticket) {
    return read_call(seeded_operation_id(prefix, scattered(ticket, pool)));
  };
  drive_load(plan, *s.daemon, r);
  return r;
}

// Polls GET /status until `expected` payments are SUCCEEDED and none is PROCESSING or UNKNOWN,
// and fills `r` with payments per second since `first_post`.
void wait_all_succeeded(const SuiteOptions& o, const Session& s, std::int64_t expected,
                        SteadyClock::time_point first_post, Result& r) {
  const auto deadline = SteadyClock::now() + o.e2e_cap;
  std::string last;
  for (;;) {
    const auto [status, body] = http_get(s.port, "/status");
    const auto now = SteadyClock::now();
    if (status == 200) {
      const boost::json::value doc = boost::json::parse(body);
      const boost::json::object& payments = doc.at("payments").as_object();
      auto count = [&](const char* state) { return payments.at(state).to_number<std::int64_t>(); };
      if (count("PROCESSING") == 0 && count("UNKNOWN") == 0) {
        if (count("SUCCEEDED") != expected)
          r.failures.push_back("every payment is terminal but " + std::to_string(count("SUCCEEDED")) +
                               " of " + std::to_string(expected) + " SUCCEEDED: " + body);
        r.attempted = r.ok = r.measured = expected;
        const double seconds = std::chrono::duration<double>(now - first_post).count();
        r.per_second = seconds > 0 ? static_cast<double>(expected) / seconds : 0;
        return;
      }
    }
    last = "HTTP " + std::to_string(status) + " " + body;
    if (now >= deadline) {
      r.capped = true;
      r.failures.push_back("not every payment was terminal " + std::to_string(o.e2e_cap.count()) +
                           " s after the first POST; last /status: " + last.substr(0, 400));
      return;
    }
    std::this_thread::sleep_for(status_poll);
  }
}

// Records the daemon's memory in every result of the session, then stops it (SIGTERM, clean
// drain) and checks that exactly `created` payments (the 201s) were added to the seeded ones;
// failures go to the first result.
void stop(Session& s, std::int64_t created, std::initializer_list<Result*> results) {
  const DaemonProcess::Memory m = s.daemon->memory();
  for (Result* r : results) r->vm_rss_kib = m.rss_kib, r->vm_hwm_kib = m.hwm_kib;
  stop_and_check_rows(*s.daemon, s.db_path, s.seeded, created, **results.begin());
  s.daemon.reset();
}

// Removes the session's directory, or keeps it (and says so in the first failed result) when
// any of its results failed.
void finish(const Session& s, const SuiteOptions& o, std::initializer_list<Result*> results) {
  if (s.dir.empty()) return;
  Result* failed = nullptr;
  for (Result* r : results)
    if (!r->failures.empty() && failed == nullptr) failed = r;
  finish_run_dir(s.dir, run_dir_options(o), failed != nullptr ? *failed : **results.begin());
}

// Runs `body` for a session; an exception becomes a failure of `primary`.
template <class Body>
void guarded(Result& primary, Body body) {
  try {
    body();
  } catch (const std::exception& e) {
    primary.failures.push_back(e.what());
  }
}

std::string ms_text(std::chrono::milliseconds latency) {
  return std::to_string(latency.count()) + " ms";
}

// The demo vendor for the live modes: a fixed latency on every charge (the `latency` fault,
// forever), no callbacks (the engine records each answer itself), its ledger in vendor_dir.
std::unique_ptr<DaemonProcess> start_vendor(const SuiteOptions& o, std::string& dir,
                                            std::uint16_t& port) {
  dir = make_run_dir(o.vendor_dir, "vendor");
  auto vendor = std::make_unique<DaemonProcess>(
      std::vector<std::string>{o.vendor_sim, "--listen", "127.0.0.1:0", "--port-file", dir + "/port",
                               "--db", dir + "/sim.db", "--api-key", bench_vendor_api_key,
                               "--callback-url", "none", "--fault",
                               "latency,count=-1,delay_ms=" + std::to_string(o.vendor_latency.count())},
      dir + "/port", dir + "/vendor.log");
  port = vendor->wait_for_port(30s);
  return vendor;
}

void run_live(const SuiteOptions& o, std::uint16_t vendor_port, SuiteResults& out) {
  const std::string vendor = "vendor " + ms_text(o.vendor_latency);
  if (o.modes.contains("live")) {
    Result in, e2e;
    in.name = "intake c=" + std::to_string(o.concurrency) + ", engine live (" + vendor + ")";
    e2e.name = "end to end c=" + std::to_string(o.concurrency) + ": first POST to all SUCCEEDED";
    Session s;
    guarded(in, [&] {
      start(s, o, "live", loopback_url(vendor_port));
      const auto first_post = SteadyClock::now();
      Result r = intake(o, s, in.name, o.concurrency, o.requests, "live-");
      in = std::move(r);
      std::fprintf(stderr, "payorch-bench-throughput: waiting for every payment to be SUCCEEDED ...\n");
      if (in.failures.empty()) wait_all_succeeded(o, s, in.ok, first_post, e2e);
      else e2e.failures.push_back("not measured: the intake failed");
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
  for (const auto* r : {&live_intake, &end_to_end, &live_single, &empty_intake, &reference_reads,
                        &pending_intake, &terminal_intake, &terminal_reads})
    if (*r) v.push_back(&**r);
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

  if (o.modes.contains("live") || o.modes.contains("single")) {
    std::string vendor_dir;
    try {
      std::uint16_t vendor_port = 0;
      std::unique_ptr<DaemonProcess> vendor = start_vendor(o, vendor_dir, vendor_port);
      run_live(o, vendor_port, out);
      const std::string ended = vendor->terminate(10s);
      if (ended != "exited with code 0") out.failures.push_back("payorch-vendor-sim " + ended);
    } catch (const std::exception& e) {
      out.failures.push_back(std::string("demo vendor: ") + e.what());
    }
    if (!vendor_dir.empty()) {
      Result vendor_run;
      vendor_run.failures = out.failures;
      finish_run_dir(vendor_dir, base, vendor_run);
      out.failures = std::move(vendor_run.failures);
    }
  }
  if (o.modes.contains("pending") || o.modes.contains("terminal")) run_scale(o, out);
  return out;
}

}  // namespace payorch::bench
