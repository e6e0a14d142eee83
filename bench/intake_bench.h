#pragma once
// payorch-bench-intake: durable intakes per second over HTTP against a baseline measured in the
// same run (one SQLite commit per row). Not a test: it measures and prints; it exits non-zero
// only when something was wrong (a non-201, a transport error, a row count that does not match
// the 201s), never because a figure was slow.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace payorch::bench {

using SteadyClock = std::chrono::steady_clock;

struct Options {
  std::int64_t requests = 4000;        // per level, warm-up included; also the baseline's rows
  std::chrono::seconds time_cap{20};   // per level: no new request is started after it
  std::vector<int> levels{1, 16, 128}; // concurrent connections
  std::string payorchd;                // the daemon binary
  std::string work_dir;                // parent of the per-run temp dirs (decides the disk)
  std::optional<std::string> json_path;
  bool keep_dirs = false;              // leave the temp dirs (databases, daemon logs) behind
};

// One run. Only requests (rows) after the warm-up are measured; every one counts for the
// durability check.
struct Result {
  std::string name;
  int concurrency = 0;                 // 0 for the baseline
  std::int64_t attempted = 0;          // requests sent (rows inserted), warm-up included
  std::int64_t ok = 0;                 // expected answers (201s, or 200s for reads; baseline:
                                       // committed rows), warm-up included
  std::int64_t unexpected = 0;         // any other answer
  std::int64_t measured = 0;
  double per_second = 0;               // measured / (last measured end - first measured start)
  double p50_ms = 0;
  double p99_ms = 0;
  bool capped = false;                 // the time cap stopped it before `requests`
  std::int64_t vm_rss_kib = 0;         // payorchd's resident set at the end of the run
  std::int64_t vm_hwm_kib = 0;         // ... and its peak (0: not measured)
  std::vector<std::string> failures;   // empty: the run is clean
};

// The first 2% of a run are warm-up (connections, page cache, the writer thread) and are not
// measured.
std::int64_t warmup_count(std::int64_t total);

// Per-row/per-request samples of the measured part of a run.
struct Samples {
  std::vector<double> latencies_ms;
  SteadyClock::time_point first_start = SteadyClock::time_point::max();
  SteadyClock::time_point last_end = SteadyClock::time_point::min();

  void add(SteadyClock::time_point start, SteadyClock::time_point end);
  void merge(const Samples& other);
};

// Fills measured, per_second, p50_ms and p99_ms (nearest-rank percentiles).
void summarize(Result& r, Samples samples);

// A fresh directory "<parent>/payorch-bench-<tag>-XXXXXX" (test::make_temp_dir); throws on
// failure. Files are written with test::write_file (support/process.h).
std::string make_run_dir(const std::string& parent, const std::string& tag);
// Removes the run's dir unless opts.keep_dirs; a failed run keeps it (database, daemon log) and
// adds where it is to its failures.
void finish_run_dir(const std::string& dir, const Options& opts, Result& r);

// A run's database: a SQLite file, or a PostgreSQL database when postgres_url is set.
struct DatabaseRef {
  std::string sqlite_path;
  std::string postgres_url = {};
};

// Rows in the payments table of `db`, read after its writers have gone.
std::int64_t count_payment_rows(const DatabaseRef& db);

// opts.requests rows, rows_per_commit to a transaction, under opts.time_cap: into a fresh
// SQLite file under opts.work_dir, or with `postgres_url`, into that fresh PostgreSQL database
// (migrated first) through one connection.
Result run_baseline(const Options& opts, int rows_per_commit = 1,
                    const std::string& postgres_url = {});
Result run_http_level(const Options& opts, int concurrency);

}  // namespace payorch::bench
