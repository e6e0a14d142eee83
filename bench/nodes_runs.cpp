// The nodes mode of payorch-bench-throughput: intake and end to end with 1, 2, 3 ... payorchd
// on one PostgreSQL database, the load's connections spread over them, beside what one
// PostgreSQL connection reaches inserting the same rows. The cluster is a throwaway one
// (tools/pg-cluster) under the disk measured, on 127.0.0.1 only, watched by this process; each
// run gets a fresh database of it, so that every count of nodes starts from an empty table.
#include <cstdio>
#include <memory>
#include <string>

#include "bench/cpu_meter.h"
#include "bench/pg_cluster.h"
#include "bench/throughput.h"
#include "bench/throughput_session.h"

namespace payorch::bench {

void run_nodes(const SuiteOptions& o, const DaemonProcess& vendor, std::uint16_t vendor_port,
               SuiteResults& out) {
  std::unique_ptr<BenchCluster> cluster;
  try {
    std::fprintf(stderr, "payorch-bench-throughput: starting PostgreSQL (tools/pg-cluster) ...\n");
    cluster = std::make_unique<BenchCluster>(o.pg_cluster, o.work_dir, o.pg_durable);
    out.pg_settings = cluster->durability();
  } catch (const std::exception& e) {
    out.failures.push_back(e.what());
    return;
  }
  const Options base = run_dir_options(o);
  std::fprintf(stderr, "payorch-bench-throughput: postgres baseline, one commit per row ...\n");
  out.pg_baseline_single = run_baseline(base, 1, cluster->create_database("baseline_single"));
  std::fprintf(stderr, "payorch-bench-throughput: postgres baseline, %d rows per commit ...\n",
               o.batch_rows);
  out.pg_baseline_batched =
      run_baseline(base, o.batch_rows, cluster->create_database("baseline_batched"));

  const std::string c = "c=" + std::to_string(o.concurrency);
  for (int n : o.nodes) {
    NodesRun& run = out.nodes.emplace_back();
    run.nodes = n;
    const std::string nodes = std::to_string(n) + (n == 1 ? " node" : " nodes");
    run.intake.name = "intake " + c + ", postgres, " + nodes;
    run.end_to_end.name = "end to end " + c + ", postgres, " + nodes;
    Session s;
    guarded(run.intake, [&] {
      const std::string database = cluster->create_database("nodes_" + std::to_string(n));
      start_nodes(s, o, "nodes" + std::to_string(n), loopback_url(vendor_port), database, n);
      CpuMeter meter(cpu_parts(s, vendor, cluster->postmaster_pid()));
      live_phase(o, s, "nodes-" + std::to_string(n) + "-", meter, run.intake, run.end_to_end,
                 run.intake_cpu, run.e2e_cpu);
      stop(s, run.intake.ok, {&run.intake, &run.end_to_end});
    });
    finish(s, o, {&run.intake, &run.end_to_end});
  }
  // The cluster is stopped and its folder removed here; if this process dies first, the
  // script's watcher does it.
}

}  // namespace payorch::bench
