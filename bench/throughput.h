#pragma once
// payorch-bench-throughput: the daemon under the conditions of scale, each figure a ratio
// against baselines measured in the same run on the same disk:
//   - intake at 128 connections and at 1, with the engine charging every payment through the
//     demo vendor (a fixed latency per charge), against SQLite inserting the same rows one
//     commit per row and 128 rows per commit;
//   - end to end: from the first POST until every payment is SUCCEEDED;
//   - intake beside a seeded backlog of pending payments with the vendor down, and intake and
//     reads beside a seeded pile of finished payments, against intake on an empty database and
//     reads of a small one;
//   - intake and end to end on PostgreSQL with 1, 2, 3 ... payorchd sharing one database and
//     the load, against the same rows inserted into PostgreSQL by one connection, against one
//     node, and against the one daemon on SQLite of the same run; where the CPUs went in each;
//   - payorchd's resident memory in each.
// Like payorch-bench-intake it never fails on a figure: only on a wrong answer, a lost row, a
// daemon that does not drain cleanly, or a run that does not finish.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/cpu_meter.h"
#include "bench/intake_bench.h"

namespace payorch::bench {

struct SuiteOptions {
  std::string payorchd;
  std::string vendor_sim;
  std::string work_dir;      // databases of payorchd and the baselines (the disk measured)
  std::string vendor_dir;    // the demo vendor's ledger and logs: not the disk measured
  std::int64_t requests = 10'000;        // intakes per run at `concurrency`; baseline rows
  std::int64_t single_requests = 1'000;  // intakes at one connection
  std::int64_t reads = 5'000;            // GETs per read run
  std::int64_t pending = 100'000;        // seeded PROCESSING payments
  std::int64_t terminal = 200'000;       // seeded SUCCEEDED / FAILED_FINAL payments
  int concurrency = 128;
  int batch_rows = 128;                  // the batched baseline's rows per commit
  int workers = 256;                     // engine.workers (the daemon's default)
  std::chrono::milliseconds vendor_latency{20};
  std::chrono::seconds time_cap{60};     // per load phase
  std::chrono::seconds e2e_cap{300};     // for every payment to end SUCCEEDED
  std::set<std::string> modes{"live", "single", "pending", "terminal"};  // and "nodes"
  std::vector<int> nodes{1, 2, 3};       // payorchd on one PostgreSQL database, one run each
  std::size_t pool_size = 8;             // each node's database.pool_size (payorchd's default)
  std::string pg_cluster;                // tools/pg-cluster
  bool pg_durable = true;                // COMMIT waits for the disk, as on SQLite (pg_cluster.h)
  // --netns: the database and every node in a network namespace of its own, their links
  // delayed `link_delay` each way (nodes_network.h); needs root and iproute2.
  bool netns = false;
  std::chrono::microseconds link_delay{1000};
  std::string net_lab;                   // tools/net-lab
  // The pgbench baseline (pgbench_run.h): clients and seconds; 0 seconds leaves it out.
  int pgbench_clients = 32;
  std::chrono::seconds pgbench_time{10};
  std::optional<std::string> json_path;
  bool keep_dirs = false;
};

// One run of the nodes mode: `nodes` payorchd on one fresh PostgreSQL database.
struct NodesRun {
  int nodes = 0;
  Result intake;
  Result end_to_end;
  CpuUse intake_cpu;  // during the intake
  CpuUse e2e_cpu;     // from the first POST until all SUCCEEDED
};

// Every figure of one run of the suite. A mode that was not run leaves its results empty.
struct SuiteResults {
  Result baseline_single;   // one commit per row
  Result baseline_batched;  // batch_rows per commit
  std::optional<Result> live_intake;
  std::optional<Result> end_to_end;  // per_second = payments / (all SUCCEEDED - first POST)
  std::optional<CpuUse> live_intake_cpu;  // the SQLite daemon's, as the nodes runs'
  std::optional<CpuUse> live_e2e_cpu;
  std::optional<Result> live_single;
  std::optional<Result> empty_intake;     // the reference of the pending and terminal intakes
  std::optional<Result> reference_reads;  // reads of a small database: terminal reads' reference
  std::optional<Result> pending_intake;
  std::optional<Result> terminal_intake;
  std::optional<Result> terminal_reads;
  std::optional<Result> pg_baseline_single;   // the nodes mode's: one PostgreSQL connection
  std::optional<Result> pg_baseline_batched;
  std::optional<Result> pgbench;              // one INSERT per transaction at pgbench_clients
  std::string network;                        // --netns: how the links were delayed
  double link_round_trip_ms = 0;              // --netns: SELECT 1 through node 1's database link
  std::vector<NodesRun> nodes;
  std::string pg_settings;                    // the cluster's durability settings
  double pending_seed_seconds = 0;
  double terminal_seed_seconds = 0;
  std::vector<std::string> failures;  // of the suite itself (the demo vendor)

  bool ok() const;
  std::vector<const Result*> all() const;
};

SuiteResults run_suite(const SuiteOptions& opts);

class DaemonProcess;
// The nodes mode (nodes_runs.cpp): starts a throwaway PostgreSQL cluster, measures its
// baselines and each count of nodes in o.nodes against the demo vendor at `vendor_port`, and
// stops and removes the cluster. A cluster that does not start is a failure of `out` that
// begins with postgres_unavailable_marker (pg_cluster.h).
void run_nodes(const SuiteOptions& o, const DaemonProcess& vendor, std::uint16_t vendor_port,
               SuiteResults& out);

}  // namespace payorch::bench
