#pragma once
// The engine's own SQL: marking calls, releasing leases, exposure, case evidence. The caller
// owns the transaction; all writes are conditional on the lease's fence.
#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "store/sqlite.h"

namespace payorch::store {

// Before a vendor call, in the claim transaction: counts the attempt and, for a submit, marks it
// started (and stamps first_submit_at once). Returns false if the fence no longer matches.
bool record_call_started(Db& db, const std::string& payment_id, std::int64_t fence, bool submit,
                         UnixMillis now);

// Gives up a lease without a decision (nothing to do now); next look at `next_attempt_at`.
bool release_lease(Db& db, const std::string& payment_id, std::int64_t fence, UnixMillis next_attempt_at);

// Releases every lease `owner` holds (clean shutdown). Returns how many.
int release_leases_of(Db& db, const std::string& owner);

struct ExposureRow {
  std::string provider;
  std::string currency;
  std::int64_t count = 0;
  std::int64_t amount_minor = 0;
};
// UNKNOWN payments plus submits in flight (started, not ended), per provider and currency.
std::vector<ExposureRow> exposure(Db& db);

// Appends a JSON object (serialized) to the evidence of the payment's open case, if any.
void append_case_evidence(Db& db, const std::string& payment_id, const std::string& evidence_json);

}  // namespace payorch::store
