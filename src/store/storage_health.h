#pragma once
// What a store's write transactions say about the database (/readyz, /status), and its failed
// transactions by kind (payorch_storage_errors_total): one record, kept alike by SQLite's
// Writer and PostgreSQL's PgStore.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"

namespace payorch::store {

// A failed transaction makes the store unwritable until a later one that wrote something
// commits (one that changed nothing wrote nothing, and proves nothing about the disk).
struct StorageHealth {
  bool writable = true;  // nothing failed yet, or a write committed since the last failure
  std::optional<UnixMillis> last_commit_at;  // the last commit that wrote something
  std::uint64_t commit_seq = 0;  // its commit sequence (0 before the first)
  // The last failure, while !writable: its kind (storage_error_kind() on SQLite,
  // pg_storage_error_kinds() on PostgreSQL; "other" for any other failure), the database's
  // message, and when it happened.
  std::string error_kind;
  std::string error;
  std::optional<UnixMillis> failed_at;
};

// StorageHealth and the failure counts, thread-safe.
class HealthRecord {
public:
  // Every kind of `kinds` is counted from 0; `clock` outlives the record.
  HealthRecord(const Clock& clock, const std::vector<std::string_view>& kinds);

  // A transaction that wrote something committed, as commit `commit_seq`.
  void committed(std::uint64_t commit_seq);
  void failed(std::string_view kind, const std::string& error);

  StorageHealth health() const;
  std::map<std::string, std::uint64_t> errors() const;

private:
  const Clock& clock_;
  mutable std::mutex mu_;
  StorageHealth health_;
  std::map<std::string, std::uint64_t> errors_;
};

}  // namespace payorch::store
