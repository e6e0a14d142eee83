// The nodes mode of payorch-bench-throughput: intake and end to end with 1, 2, 3 ... payorchd
// on one PostgreSQL database, the load's connections spread over them, beside what one
// PostgreSQL connection reaches inserting the same rows. The cluster is a throwaway one
// (tools/pg-cluster) under the disk measured, on 127.0.0.1 only, watched by this process; each
// run gets a fresh database of it, so that every count of nodes starts from an empty table.
// Beside them, pgbench inserting one payment-sized row per transaction (pgbench_run.h); with
// --netns, the database and each node in a network namespace of its own (nodes_network.h).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/cpu_meter.h"
#include "bench/nodes_network.h"
#include "bench/pg_cluster.h"
#include "bench/pgbench_run.h"
#include "bench/throughput.h"
#include "bench/throughput_session.h"

namespace payorch::bench {

namespace {

// The nodes' network of --netns, or nullptr; a lab that cannot be made is a failure of `out`.
std::unique_ptr<NodesNetwork> make_network(const SuiteOptions& o, SuiteResults& out) {
  if (!o.netns) return nullptr;
  try {
    std::fprintf(stderr, "payorch-bench-throughput: network namespaces (tools/net-lab) ...\n");
    return std::make_unique<NodesNetwork>(o.net_lab, *std::max_element(o.nodes.begin(), o.nodes.end()),
                                          o.link_delay);
  } catch (const std::exception& e) {
    out.failures.push_back(std::string("--netns: ") + e.what());
    return nullptr;
  }
}

// pgbench on a database of its own: from this machine's loopback, or with --netns from node
// 1's namespace through node 1's database link.
Result pgbench_baseline(const SuiteOptions& o, BenchCluster& cluster, NodesNetwork* network,
                        std::uint16_t vendor_port) {
  std::fprintf(stderr, "payorch-bench-throughput: pgbench, %d clients, %lld s ...\n", o.pgbench_clients,
               static_cast<long long>(o.pgbench_time.count()));
  PgbenchSpec spec;
  spec.program = find_pgbench();
  spec.admin_url = cluster.create_database("pgbench");
  spec.host = "127.0.0.1";
  spec.port = cluster.server_port();
  if (network != nullptr) {
    const NodesNetwork::Node node = network->node(1, vendor_port);
    spec.prefix = node.prefix;
    spec.host = node.database.substr(0, node.database.rfind(':'));
    spec.port = static_cast<std::uint16_t>(std::stoi(node.database.substr(node.database.rfind(':') + 1)));
  }
  spec.password = cluster.password();
  spec.database = "pgbench";
  spec.clients = o.pgbench_clients;
  spec.duration = o.pgbench_time;
  spec.dir = make_run_dir(o.work_dir, "pgbench");
  Result r = run_pgbench(spec);
  finish_run_dir(spec.dir, run_dir_options(o), r);
  return r;
}

}  // namespace

void run_nodes(const SuiteOptions& o, const DaemonProcess& vendor, std::uint16_t vendor_port,
               SuiteResults& out) {
  // Declared before the cluster: the cluster stops first, then the namespaces go.
  std::unique_ptr<NodesNetwork> network = make_network(o, out);
  if (o.netns && !network) return;
  std::unique_ptr<BenchCluster> cluster;
  try {
    std::fprintf(stderr, "payorch-bench-throughput: starting PostgreSQL (tools/pg-cluster) ...\n");
    ClusterPlacement placement;
    if (network) {
      placement.prefix = network->cluster_prefix();
      placement.reach = [&network](std::uint16_t port) { return network->reach_server(port); };
    }
    cluster = std::make_unique<BenchCluster>(o.pg_cluster, o.work_dir, o.pg_durable, std::move(placement));
    out.pg_settings = cluster->durability();
  } catch (const std::exception& e) {
    out.failures.push_back(e.what());
    return;
  }
  if (network) {
    out.network = network->description();
    const NodesNetwork::Node first = network->node(1, vendor_port);
    try {
      out.link_round_trip_ms = test::select_one_round_trip_ms(
          first.netns, with_host_port(cluster->create_database("round_trip"), first.database), 20);
    } catch (const std::exception& e) {
      out.failures.push_back(std::string("SELECT 1 through node 1's link: ") + e.what());
    }
    std::fprintf(stderr, "payorch-bench-throughput: links: %s; SELECT 1 round trip %.2f ms\n",
                 out.network.c_str(), out.link_round_trip_ms);
  }
  const Options base = run_dir_options(o);
  std::fprintf(stderr, "payorch-bench-throughput: postgres baseline, one commit per row ...\n");
  out.pg_baseline_single = run_baseline(base, 1, cluster->create_database("baseline_single"));
  std::fprintf(stderr, "payorch-bench-throughput: postgres baseline, %d rows per commit ...\n",
               o.batch_rows);
  out.pg_baseline_batched =
      run_baseline(base, o.batch_rows, cluster->create_database("baseline_batched"));
  if (o.pgbench_time.count() > 0) out.pgbench = pgbench_baseline(o, *cluster, network.get(), vendor_port);

  const std::string c = "c=" + std::to_string(o.concurrency);
  const std::string links = network ? ", namespaces" : "";
  for (int n : o.nodes) {
    NodesRun& run = out.nodes.emplace_back();
    run.nodes = n;
    const std::string nodes = std::to_string(n) + (n == 1 ? " node" : " nodes") + links;
    run.intake.name = "intake " + c + ", postgres, " + nodes;
    run.end_to_end.name = "end to end " + c + ", postgres, " + nodes;
    Session s;
    guarded(run.intake, [&] {
      const std::string database = cluster->create_database("nodes_" + std::to_string(n));
      start_nodes(s, o, "nodes" + std::to_string(n), loopback_url(vendor_port), database, n,
                  network.get(), vendor_port);
      std::vector<CpuPart> parts = cpu_parts(s, vendor, cluster->postmaster_pid());
      if (network) parts.back().name = "load+relays";  // the relays are this process's thread
      CpuMeter meter(std::move(parts));
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
