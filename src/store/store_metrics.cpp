#include "store/store_metrics.h"

#include <sys/stat.h>

#include <vector>

namespace payorch::store {

StoreMetrics::StoreMetrics(Metrics& metrics, std::string driver)
    : metrics_(&metrics), driver_(std::move(driver)) {
  metrics.declare_histogram(commit_duration_metric,
                            "Write transactions that committed: seconds from BEGIN until COMMIT returned "
                            "(durable), by database driver",
                            {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  if (driver_ == "sqlite")
    metrics.declare_histogram(commit_batch_size_metric,
                              "Jobs (intakes, transitions, ...) that shared one committed transaction "
                              "of the single writer (group commit)",
                              {1, 2, 4, 8, 16, 32, 64, 128, 256, 512});
  if (driver_ == "postgres")
    metrics.declare_histogram(pool_wait_metric,
                              "Seconds a transaction waited for a free connection of the pool",
                              {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5});
}

void StoreMetrics::committed(double seconds, std::size_t jobs) const {
  if (!metrics_) return;
  metrics_->observe(commit_duration_metric, {{"driver", driver_}}, seconds);
  if (driver_ == "sqlite") metrics_->observe(commit_batch_size_metric, {}, static_cast<double>(jobs));
}

void StoreMetrics::waited_for_connection(double seconds) const {
  if (metrics_) metrics_->observe(pool_wait_metric, {}, seconds);
}

std::string render_wal_size(const std::string& db_path) {
  struct stat st {};
  const double bytes = ::stat((db_path + "-wal").c_str(), &st) == 0 ? static_cast<double>(st.st_size) : 0.0;
  return render_gauge(wal_bytes_metric, "Size of the SQLite database's write-ahead log file", {{{}, bytes}});
}

}  // namespace payorch::store
