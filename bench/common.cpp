// Measurement and file helpers shared by the benchmarks.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "bench/intake_bench.h"
#include "store/postgres/connection.h"
#include "store/sqlite.h"
#include "support/process.h"

namespace payorch::bench {
namespace {

// Nearest-rank percentile of sorted, non-empty `v`.
double percentile(const std::vector<double>& v, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

}  // namespace

std::int64_t warmup_count(std::int64_t total) { return total / 50; }

void Samples::add(SteadyClock::time_point start, SteadyClock::time_point end) {
  latencies_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  first_start = std::min(first_start, start);
  last_end = std::max(last_end, end);
}

void Samples::merge(const Samples& other) {
  latencies_ms.insert(latencies_ms.end(), other.latencies_ms.begin(), other.latencies_ms.end());
  first_start = std::min(first_start, other.first_start);
  last_end = std::max(last_end, other.last_end);
}

void summarize(Result& r, Samples samples) {
  r.measured = static_cast<std::int64_t>(samples.latencies_ms.size());
  if (r.measured == 0) return;
  std::sort(samples.latencies_ms.begin(), samples.latencies_ms.end());
  r.p50_ms = percentile(samples.latencies_ms, 0.50);
  r.p99_ms = percentile(samples.latencies_ms, 0.99);
  const double window_s =
      std::chrono::duration<double>(samples.last_end - samples.first_start).count();
  r.per_second = window_s > 0 ? static_cast<double>(r.measured) / window_s : 0;
}

std::string make_run_dir(const std::string& parent, const std::string& tag) {
  return test::make_temp_dir("payorch-bench-" + tag, parent);
}

void finish_run_dir(const std::string& dir, const Options& opts, Result& r) {
  if (opts.keep_dirs) return;
  if (!r.failures.empty()) {
    r.failures.push_back("kept " + dir + " for inspection");
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

std::int64_t count_payment_rows(const DatabaseRef& ref) {
  if (!ref.postgres_url.empty()) {
    store::pg::Connection conn(ref.postgres_url);
    return conn.exec("SELECT count(*) FROM payments").integer(0, 0);
  }
  // read_write, not read_only: if the writer died without checkpointing, opening recovers the
  // WAL, and what recovery finds is exactly what the 201s promised.
  store::Db db(ref.sqlite_path, store::Db::Mode::read_write);
  store::Stmt stmt = db.prepare("SELECT count(*) FROM payments");
  if (!stmt.step()) throw std::runtime_error("count(*) returned no row");
  return stmt.col_int(0);
}

}  // namespace payorch::bench
