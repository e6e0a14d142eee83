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
//   - payorchd's resident memory in each.
// Like payorch-bench-intake it never fails on a figure: only on a wrong answer, a lost row, a
// daemon that does not drain cleanly, or a run that does not finish.
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

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
  std::set<std::string> modes{"live", "single", "pending", "terminal"};
  std::optional<std::string> json_path;
  bool keep_dirs = false;
};

// Every figure of one run of the suite. A mode that was not run leaves its results empty.
struct SuiteResults {
  Result baseline_single;   // one commit per row
  Result baseline_batched;  // batch_rows per commit
  std::optional<Result> live_intake;
  std::optional<Result> end_to_end;  // per_second = payments / (all SUCCEEDED - first POST)
  std::optional<Result> live_single;
  std::optional<Result> empty_intake;     // the reference of the pending and terminal intakes
  std::optional<Result> reference_reads;  // reads of a small database: terminal reads' reference
  std::optional<Result> pending_intake;
  std::optional<Result> terminal_intake;
  std::optional<Result> terminal_reads;
  double pending_seed_seconds = 0;
  double terminal_seed_seconds = 0;
  std::vector<std::string> failures;  // of the suite itself (the demo vendor)

  bool ok() const;
  std::vector<const Result*> all() const;
};

SuiteResults run_suite(const SuiteOptions& opts);

}  // namespace payorch::bench
