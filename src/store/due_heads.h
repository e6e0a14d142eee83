#pragma once
// claim_due's choice among the providers' due heads, on both drivers (store/leases.h): each
// provider's oldest due payments are read up to its quota, then the oldest across them are kept.
#include <string>
#include <vector>

#include "core/clock.h"

namespace payorch::store {

struct DueHead {
  UnixMillis at;  // next_attempt_at
  std::string id;
};

// Keeps the `max` oldest of `heads` (by next_attempt_at, then id), oldest first.
void keep_oldest_due(std::vector<DueHead>& heads, int max);

}  // namespace payorch::store
