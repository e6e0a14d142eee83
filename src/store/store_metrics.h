#pragma once
// The store's families on GET /metrics: how long commits take, how many jobs share one (SQLite's
// group commit), how long a job waits for a pooled connection (PostgreSQL), and the size of
// SQLite's WAL file. One home for their names, help and buckets; the writers record into it.
#include <cstddef>
#include <string>

#include "util/metrics.h"

namespace payorch::store {

inline constexpr const char* commit_duration_metric = "payorch_store_commit_duration_seconds";
inline constexpr const char* commit_batch_size_metric = "payorch_store_commit_batch_size";
inline constexpr const char* pool_wait_metric = "payorch_store_pool_wait_seconds";
inline constexpr const char* wal_bytes_metric = "payorch_store_wal_bytes";

class StoreMetrics {
public:
  // Records nothing (tests, tools).
  StoreMetrics() = default;
  // Declares the families of `driver` ("sqlite" or "postgres") on `metrics`, which outlives
  // this and every copy of it.
  StoreMetrics(Metrics& metrics, std::string driver);

  // A transaction that committed: from BEGIN until COMMIT returned, `jobs` sharing it.
  void committed(double seconds, std::size_t jobs) const;
  // Time a transaction waited for a free pooled connection (PostgreSQL).
  void waited_for_connection(double seconds) const;

private:
  Metrics* metrics_ = nullptr;
  std::string driver_;
};

// payorch_store_wal_bytes: the size of `db_path`-wal now (0 when there is none: checkpointed
// and truncated, or not yet written).
std::string render_wal_size(const std::string& db_path);

}  // namespace payorch::store
