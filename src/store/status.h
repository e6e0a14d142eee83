#pragma once
// Aggregates for GET /status: counts only, never tenant data.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/refund_state.h"
#include "store/sqlite.h"

namespace payorch::store {

struct StatusCounts {
  std::map<std::string, std::int64_t> payments_by_state;  // every state present, zero included
  std::map<std::string, std::int64_t> refunds_by_state;   // every RefundState, zero included
  std::int64_t open_cases = 0;
  std::map<std::string, std::int64_t> open_cases_by_reason;  // every reason, zero included
  std::optional<UnixMillis> oldest_open_case_at;
};

StatusCounts status_counts(Db& db);

// Refunds by state name (DEFERRED, PROCESSING, UNKNOWN, SUCCEEDED, FAILED_FINAL), every state
// present, zero included, from a driver's count_refunds() (store::Tx).
std::map<std::string, std::int64_t> refunds_by_state(
    const std::vector<std::pair<RefundState, std::int64_t>>& counts);

}  // namespace payorch::store
