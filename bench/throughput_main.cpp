// payorch-bench-throughput: see bench/throughput.h. Prints a table of figures, then each mode
// as a ratio against the baseline or reference it is compared with.
#include <unistd.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench/cli.h"
#include "bench/throughput.h"
#include "support/process.h"

namespace {

using namespace payorch::bench;

constexpr const char* usage =
    "usage: payorch-bench-throughput [--full] [--modes live,single,pending,terminal,nodes]\n"
    "          [--requests N] [--single N] [--reads N] [--pending N] [--terminal N]\n"
    "          [--concurrency C] [--workers W] [--vendor-latency DUR] [--seconds S]\n"
    "          [--e2e-seconds S] [--json FILE] [--payorchd P] [--vendor-sim P] [--dir DIR]\n"
    "          [--vendor-dir DIR] [--nodes 1,2,3] [--pool-size N] [--pg-fast]\n"
    "          [--pg-cluster P] [--keep]\n"
    "  --full            the full sizes: 50000 requests, 3000 at c=1, 20000 reads,\n"
    "                    1000000 pending, 10000000 terminal (default: 10000, 1000, 5000,\n"
    "                    100000, 200000); flags after it override single sizes\n"
    "  --modes LIST      live: intake at C connections + end to end, engine charging through\n"
    "                    the demo vendor; single: intake at 1 connection, same vendor;\n"
    "                    pending / terminal: intake (and reads) beside a seeded backlog, vendor\n"
    "                    down, against the same on an empty database;\n"
    "                    nodes: intake at C connections + end to end with 1, 2, 3 ... payorchd\n"
    "                    on one PostgreSQL database, the connections spread over them, same\n"
    "                    vendor (a throwaway cluster, tools/pg-cluster; needs PostgreSQL 15)\n"
    "                    (default: live,single,pending,terminal)\n"
    "  --requests N      intakes per run at C connections; also the baselines' rows\n"
    "  --single N        intakes at one connection\n"
    "  --reads N         GET /v1/payments/{operation_id} per read run\n"
    "  --pending N       seeded PROCESSING payments (9 never submitted : 1 submit in flight)\n"
    "  --terminal N      seeded finished payments (19 SUCCEEDED : 1 FAILED_FINAL)\n"
    "  --concurrency C   keep-alive connections of the concurrent runs, and the batched\n"
    "                    baseline's rows per commit (default 128)\n"
    "  --workers W       engine.workers (default 256, as payorchd's own)\n"
    "  --vendor-latency DUR  the demo vendor's delay per charge (default 20ms)\n"
    "  --seconds S       time cap per load phase (default 60)\n"
    "  --e2e-seconds S   cap for every payment to be SUCCEEDED (default 300)\n"
    "  --json FILE       also write the figures as JSON\n"
    "  --payorchd P, --vendor-sim P   the programs (default: built beside this one)\n"
    "  --dir DIR         payorchd's and the baselines' databases: the disk measured\n"
    "                    (default $TMPDIR or /tmp)\n"
    "  --vendor-dir DIR  the demo vendor's ledger (default /dev/shm: the vendor's disk is not\n"
    "                    payorch's)\n"
    "  --nodes LIST      the counts of payorchd of the nodes mode (default 1,2,3)\n"
    "  --pool-size N     each node's database.pool_size (default 8, as payorchd's own)\n"
    "  --pg-fast         keep the throwaway cluster's fsync=off, synchronous_commit=off\n"
    "                    (default: both on, so that a COMMIT waits for the disk as on SQLite)\n"
    "  --pg-cluster P    the cluster script (default: tools/pg-cluster of this source tree)\n"
    "  --netns           nodes mode: PostgreSQL and every node in a network namespace of its\n"
    "                    own, each link to the database and to the vendor delayed 1 ms each\n"
    "                    way (tc netem, else userspace relays); needs root and iproute2\n"
    "  --link-delay-ms N the links' delay each way (implies --netns; default 1)\n"
    "  --pgbench-seconds S  the pgbench baseline's length (default 10; 0 leaves it out)\n"
    "  --pgbench-clients C  its clients (default 32)\n"
    "  --keep            keep every run's directory (databases, logs)\n";

SuiteOptions parse_args(int argc, char** argv) {
  SuiteOptions o;
  o.payorchd = PAYORCHD_PATH;
  o.vendor_sim = VENDOR_SIM_PATH;
  o.work_dir = default_work_dir();
  o.vendor_dir = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : o.work_dir;
  o.pg_cluster = PG_CLUSTER_PATH;
  o.net_lab = NET_LAB_PATH;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    auto count = [&](std::int64_t max) { return parse_positive(arg, value(), max); };
    if (arg == "--full") {
      o.requests = 50'000;
      o.single_requests = 3'000;
      o.reads = 20'000;
      o.pending = 1'000'000;
      o.terminal = 10'000'000;
      o.time_cap = std::chrono::seconds(120);
    } else if (arg == "--modes") {
      o.modes.clear();
      for (const std::string& m : parse_list(arg, value())) {
        if (m != "live" && m != "single" && m != "pending" && m != "terminal" && m != "nodes")
          throw std::invalid_argument("--modes: unknown mode \"" + m + "\"");
        o.modes.insert(m);
      }
    } else if (arg == "--requests") o.requests = count(100'000'000);
    else if (arg == "--single") o.single_requests = count(100'000'000);
    else if (arg == "--reads") o.reads = count(100'000'000);
    else if (arg == "--pending") o.pending = count(1'000'000'000);
    else if (arg == "--terminal") o.terminal = count(1'000'000'000);
    else if (arg == "--concurrency") o.concurrency = o.batch_rows = static_cast<int>(count(1000));
    else if (arg == "--workers") o.workers = static_cast<int>(count(10'000));
    else if (arg == "--vendor-latency") o.vendor_latency = parse_duration_flag(arg, value());
    else if (arg == "--seconds") o.time_cap = std::chrono::seconds(count(86'400));
    else if (arg == "--e2e-seconds") o.e2e_cap = std::chrono::seconds(count(86'400));
    else if (arg == "--json") o.json_path = value();
    else if (arg == "--payorchd") o.payorchd = value();
    else if (arg == "--vendor-sim") o.vendor_sim = value();
    else if (arg == "--dir") o.work_dir = value();
    else if (arg == "--vendor-dir") o.vendor_dir = value();
    else if (arg == "--nodes") {
      o.nodes.clear();
      for (const std::string& n : parse_list(arg, value()))
        o.nodes.push_back(static_cast<int>(parse_positive(arg, n, 16)));
    } else if (arg == "--pool-size") o.pool_size = static_cast<std::size_t>(count(256));
    else if (arg == "--pg-fast") o.pg_durable = false;
    else if (arg == "--pg-cluster") o.pg_cluster = value();
    else if (arg == "--netns") o.netns = true;
    else if (arg == "--link-delay-ms") {
      o.netns = true;
      o.link_delay = std::chrono::microseconds(count(1000) * 1000);
    } else if (arg == "--pgbench-seconds") {
      const std::string v = value();
      o.pgbench_time = std::chrono::seconds(v == "0" ? 0 : parse_positive(arg, v, 3600));
    } else if (arg == "--pgbench-clients") o.pgbench_clients = static_cast<int>(count(1000));
    else if (arg == "--keep") o.keep_dirs = true;
    else throw std::invalid_argument("unknown argument \"" + arg + "\"");
  }
  for (const std::string* program : {&o.payorchd, &o.vendor_sim})
    if (::access(program->c_str(), X_OK) != 0)
      throw std::invalid_argument("no executable at " + *program +
                                  " (build it, or pass --payorchd / --vendor-sim)");
  return o;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

double mib(std::int64_t kib) { return static_cast<double>(kib) / 1024.0; }

void print_row(const Result& r) {
  const bool latencies = r.p50_ms > 0;
  std::printf("%-58s %8lld %9.1f ", r.name.c_str(), static_cast<long long>(r.measured), r.per_second);
  if (latencies) std::printf("%8.2f %8.2f ", r.p50_ms, r.p99_ms);
  else std::printf("%8s %8s ", "-", "-");
  if (r.vm_hwm_kib > 0) std::printf("%8.1f %8.1f", mib(r.vm_rss_kib), mib(r.vm_hwm_kib));
  else std::printf("%8s %8s", "-", "-");
  std::printf("%s\n", r.failures.empty() ? "" : "  FAILED");
}

// The nodes mode as a table: each count of nodes against one node, against the one SQLite
// daemon of the live mode, and against both drivers' batched baselines.
void print_nodes_ratios(const SuiteOptions& o, const SuiteResults& s) {
  if (s.nodes.empty()) return;
  const NodesRun* one = nullptr;
  for (const NodesRun& run : s.nodes)
    if (run.nodes == 1) one = &run;
  const double pg_batch = s.pg_baseline_batched ? s.pg_baseline_batched->per_second : 0;
  const double sqlite_batch = s.baseline_batched.per_second;
  std::printf("\nmany nodes on postgres (%s), each r/s (end to end: payments/s) against:\n",
              s.pg_settings.c_str());
  const std::string pg_b = "pg " + std::to_string(o.batch_rows) + "/commit";
  const std::string sqlite_b = "sqlite " + std::to_string(o.batch_rows) + "/commit";
  std::printf("  %-34s %8s %14s %15s %17s %8s\n", "", "1 node", "sqlite daemon", pg_b.c_str(),
              sqlite_b.c_str(), "p99 ms");
  auto cell = [](double v, int width) {
    if (v > 0) std::printf(" %*.2fx", width - 1, v);
    else std::printf(" %*s", width, "-");
  };
  auto row = [&](const std::string& what, const Result& r, const Result* one_node,
                 const std::optional<Result>& sqlite) {
    std::printf("  %-34s", what.c_str());
    cell(one_node ? ratio(r.per_second, one_node->per_second) : 0, 8);
    cell(sqlite ? ratio(r.per_second, sqlite->per_second) : 0, 14);
    cell(ratio(r.per_second, pg_batch), 15);
    cell(ratio(r.per_second, sqlite_batch), 17);
    if (r.p99_ms > 0) std::printf(" %8.2f\n", r.p99_ms);
    else std::printf(" %8s\n", "-");
  };
  if (s.live_intake) row("intake, the sqlite daemon", *s.live_intake, nullptr, s.live_intake);
  if (s.end_to_end) row("end to end, the sqlite daemon", *s.end_to_end, nullptr, s.end_to_end);
  for (const NodesRun& run : s.nodes) {
    const std::string nodes = std::to_string(run.nodes) + (run.nodes == 1 ? " node" : " nodes");
    row("intake, " + nodes, run.intake, one ? &one->intake : nullptr, s.live_intake);
    row("end to end, " + nodes, run.end_to_end, one ? &one->end_to_end : nullptr, s.end_to_end);
  }
  if (s.pg_baseline_single && s.pg_baseline_batched)
    std::printf("  the baselines: postgres %.2fx sqlite at one commit per row, %.2fx at %d rows per commit\n",
                ratio(s.pg_baseline_single->per_second, s.baseline_single.per_second),
                ratio(pg_batch, sqlite_batch), o.batch_rows);
  if (s.pgbench && s.pgbench->per_second > 0) {
    const double tps = s.pgbench->per_second;
    std::printf("  against pgbench, one INSERT per transaction at %d clients for %lld s (%.1f tx/s):\n",
                o.pgbench_clients, static_cast<long long>(o.pgbench_time.count()), tps);
    for (const NodesRun& run : s.nodes) {
      const std::string what = "intake, postgres " + std::to_string(run.nodes) + (run.nodes == 1 ? " node" : " nodes");
      std::printf("    %-32s r/s %.2fx pgbench one-row-per-commit at %d clients\n", what.c_str(),
                  ratio(run.intake.per_second, tps), o.pgbench_clients);
    }
    std::printf("    %-32s r/s %.2fx pgbench one-row-per-commit at %d clients\n",
                "postgres one commit per row", ratio(s.pg_baseline_single ? s.pg_baseline_single->per_second : 0, tps),
                o.pgbench_clients);
  }
  if (s.end_to_end)
    for (const NodesRun& run : s.nodes)
      if (run.nodes == 1)
        std::printf("  end to end, postgres 1 node: payments/s %.2fx the sqlite daemon's end to end (%.1f vs %.1f /s)\n",
                    ratio(run.end_to_end.per_second, s.end_to_end->per_second), run.end_to_end.per_second,
                    s.end_to_end->per_second);
  if (!s.network.empty())
    std::printf("  network: the database and each node in a network namespace of its own, every link\n"
                "    to the database and to the vendor delayed %.2f ms each way by %s;\n"
                "    SELECT 1 through node 1's database link: %.2f ms round trip (median of 20)\n",
                static_cast<double>(o.link_delay.count()) / 1000.0, s.network.c_str(), s.link_round_trip_ms);
}

// Where the CPUs went in each live phase.
void print_cpu(const SuiteResults& s) {
  if (!s.live_intake_cpu && s.nodes.empty()) return;
  std::printf("\ncpu (share of the machine's cores; other: the kernel's loopback work outside the\n"
              " parts, and anything else that ran on the machine meanwhile):\n");
  auto line = [](const std::string& what, const CpuUse& use) {
    std::printf("  %-34s %s\n", what.c_str(), use.describe().c_str());
  };
  if (s.live_intake_cpu) line("intake, the sqlite daemon", *s.live_intake_cpu);
  if (s.live_e2e_cpu) line("end to end, the sqlite daemon", *s.live_e2e_cpu);
  for (const NodesRun& run : s.nodes) {
    const std::string nodes = std::to_string(run.nodes) + (run.nodes == 1 ? " node" : " nodes");
    line("intake, postgres " + nodes, run.intake_cpu);
    line("end to end, postgres " + nodes, run.e2e_cpu);
  }
}

void print_ratios(const SuiteOptions& o, const SuiteResults& s) {
  const Result& one = s.baseline_single;
  const Result& batch = s.baseline_batched;
  std::printf("\nratios (each against figures measured above, in this run):\n");
  if (s.live_intake)
    std::printf("  %-34s r/s %.2fx one commit per row, %.2fx %d rows per commit; p99 %.2f ms\n",
                "intake, engine live", ratio(s.live_intake->per_second, one.per_second),
                ratio(s.live_intake->per_second, batch.per_second), o.batch_rows, s.live_intake->p99_ms);
  if (s.live_single)
    std::printf("  %-34s p50 %.2fx the one-commit-per-row p50 (%.2f ms vs %.2f ms)\n",
                "intake c=1, engine live", ratio(s.live_single->p50_ms, one.p50_ms),
                s.live_single->p50_ms, one.p50_ms);
  if (s.end_to_end)
    std::printf("  %-34s payments/s %.2fx %d rows per commit (%.1f vs %.1f /s)\n", "end to end",
                ratio(s.end_to_end->per_second, batch.per_second), o.batch_rows,
                s.end_to_end->per_second, batch.per_second);
  auto vs_reference = [&](const char* what, const std::optional<Result>& r,
                          const std::optional<Result>& ref, const char* ref_name) {
    if (!r || !ref) return;
    std::printf("  %-34s r/s %.2fx %s (%.1f vs %.1f /s; p50 %.2f vs %.2f ms; p99 %.2f vs %.2f ms)\n",
                what, ratio(r->per_second, ref->per_second), ref_name, r->per_second, ref->per_second,
                r->p50_ms, ref->p50_ms, r->p99_ms, ref->p99_ms);
  };
  const std::string pending = "intake, " + std::to_string(o.pending) + " pending";
  const std::string terminal = "intake, " + std::to_string(o.terminal) + " terminal";
  const std::string terminal_reads = "GET, " + std::to_string(o.terminal) + " terminal";
  vs_reference(pending.c_str(), s.pending_intake, s.empty_intake, "intake on an empty database");
  vs_reference(terminal.c_str(), s.terminal_intake, s.empty_intake, "intake on an empty database");
  vs_reference(terminal_reads.c_str(), s.terminal_reads, s.reference_reads,
               "GET on a small database");
  print_nodes_ratios(o, s);
}

void print_report(const SuiteOptions& o, const SuiteResults& s) {
  std::printf("payorch throughput benchmark (%u cores; databases under %s; vendor ledger under %s;\n"
              "  engine.workers %d; vendor latency %lld ms; %lld s cap per phase)\n",
              std::thread::hardware_concurrency(), o.work_dir.c_str(), o.vendor_dir.c_str(), o.workers,
              static_cast<long long>(o.vendor_latency.count()), static_cast<long long>(o.time_cap.count()));
  std::printf("%-58s %8s %9s %8s %8s %8s %8s\n", "", "n", "r/s", "p50 ms", "p99 ms", "RSS MiB", "peak MiB");
  for (const Result* r : s.all()) print_row(*r);
  std::printf("(n = measured requests or rows, after a warm-up of the first 2%%; end to end: payments\n"
              " over the seconds from the first POST until GET /status showed all SUCCEEDED; RSS:\n"
              " payorchd's VmRSS and VmHWM at the end of its run, the largest node's)\n");
  if (s.pending_intake)
    std::printf("seeded %lld pending payments in %.1f s\n", static_cast<long long>(o.pending),
                s.pending_seed_seconds);
  if (s.terminal_intake)
    std::printf("seeded %lld terminal payments in %.1f s\n", static_cast<long long>(o.terminal),
                s.terminal_seed_seconds);
  print_ratios(o, s);
  print_cpu(s);
  for (const Result* r : s.all()) {
    if (r->capped)
      std::printf("note: %s hit its time cap after %lld requests\n", r->name.c_str(),
                  static_cast<long long>(r->attempted));
    for (const std::string& f : r->failures) std::printf("FAILURE: %s: %s\n", r->name.c_str(), f.c_str());
  }
  for (const std::string& f : s.failures) std::printf("FAILURE: %s\n", f.c_str());
}

boost::json::object to_json(const Result& r) {
  boost::json::array failures;
  for (const std::string& f : r.failures) failures.emplace_back(f);
  return {{"name", r.name},         {"concurrency", r.concurrency}, {"attempted", r.attempted},
          {"ok", r.ok},             {"unexpected", r.unexpected},   {"measured", r.measured},
          {"per_second", r.per_second}, {"p50_ms", r.p50_ms},       {"p99_ms", r.p99_ms},
          {"vm_rss_kib", r.vm_rss_kib}, {"vm_hwm_kib", r.vm_hwm_kib}, {"capped", r.capped},
          {"failures", std::move(failures)}};
}

boost::json::object to_json(const CpuUse& use) {
  boost::json::object parts;
  for (const auto& [name, seconds] : use.parts) parts[name] = seconds;
  return {{"wall_seconds", use.wall_seconds}, {"cores", use.cores},
          {"busy_seconds", use.busy_seconds}, {"cpu_seconds", std::move(parts)}};
}

void write_json(const SuiteOptions& o, const SuiteResults& s) {
  boost::json::array results;
  for (const Result* r : s.all()) results.push_back(to_json(*r));
  boost::json::object cpu;
  if (s.live_intake_cpu) cpu["intake, the sqlite daemon"] = to_json(*s.live_intake_cpu);
  if (s.live_e2e_cpu) cpu["end to end, the sqlite daemon"] = to_json(*s.live_e2e_cpu);
  for (const NodesRun& run : s.nodes) {
    cpu["intake, postgres nodes=" + std::to_string(run.nodes)] = to_json(run.intake_cpu);
    cpu["end to end, postgres nodes=" + std::to_string(run.nodes)] = to_json(run.e2e_cpu);
  }
  boost::json::array failures;
  for (const std::string& f : s.failures) failures.emplace_back(f);
  const boost::json::object doc{{"cores", std::thread::hardware_concurrency()},
                                {"work_dir", o.work_dir},
                                {"workers", o.workers},
                                {"vendor_latency_ms", o.vendor_latency.count()},
                                {"pending", o.pending},
                                {"terminal", o.terminal},
                                {"pending_seed_seconds", s.pending_seed_seconds},
                                {"terminal_seed_seconds", s.terminal_seed_seconds},
                                {"postgres_settings", s.pg_settings},
                                {"network", s.network},
                                {"link_delay_ms", o.netns ? static_cast<double>(o.link_delay.count()) / 1000.0 : 0.0},
                                {"link_round_trip_ms", s.link_round_trip_ms},
                                {"results", std::move(results)},
                                {"cpu", std::move(cpu)},
                                {"failures", std::move(failures)},
                                {"ok", s.ok()}};
  payorch::test::write_file(*o.json_path, boost::json::serialize(doc) + "\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (asks_for_help(argc, argv)) {
    std::printf("%s", usage);
    return 0;
  }
  SuiteOptions opts;
  try {
    opts = parse_args(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "payorch-bench-throughput: %s\n%s", e.what(), usage);
    return 2;
  }
  try {
    const SuiteResults results = run_suite(opts);
    print_report(opts, results);
    if (opts.json_path) write_json(opts, results);
    return results.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payorch-bench-throughput: %s\n", e.what());
    return 1;
  }
}
