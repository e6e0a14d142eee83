#pragma once
// Aggregates for GET /status: counts only, never tenant data.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/clock.h"
#include "store/sqlite.h"

namespace payorch::store {

struct StatusCounts {
  std::map<std::string, std::int64_t> payments_by_state;  // every state present, zero included
  std::int64_t open_cases = 0;
  std::map<std::string, std::int64_t> open_cases_by_reason;  // every reason, zero included
  std::optional<UnixMillis> oldest_open_case_at;
};

StatusCounts status_counts(Db& db);

}  // namespace payorch::store
