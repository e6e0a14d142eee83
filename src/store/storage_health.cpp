#include "store/storage_health.h"

#include "util/log.h"

namespace payorch::store {

HealthRecord::HealthRecord(const Clock& clock, const std::vector<std::string_view>& kinds)
    : clock_(clock) {
  for (std::string_view kind : kinds) errors_[std::string(kind)] = 0;
}

void HealthRecord::committed(std::uint64_t commit_seq) {
  std::lock_guard lock(mu_);
  if (!health_.writable)
    log::info("store.writable", "a transaction committed again after storage errors",
              {{"last_error_kind", health_.error_kind}});
  health_.writable = true;
  health_.last_commit_at = clock_.now_ms();
  health_.commit_seq = commit_seq;
  health_.error_kind.clear();
  health_.error.clear();
  health_.failed_at.reset();
}

void HealthRecord::failed(std::string_view kind, const std::string& error) {
  std::lock_guard lock(mu_);
  health_.writable = false;
  health_.error_kind = kind;
  health_.error = error;
  health_.failed_at = clock_.now_ms();
  ++errors_[std::string(kind)];
}

StorageHealth HealthRecord::health() const {
  std::lock_guard lock(mu_);
  return health_;
}

std::map<std::string, std::uint64_t> HealthRecord::errors() const {
  std::lock_guard lock(mu_);
  return errors_;
}

}  // namespace payorch::store
