#pragma once
// The engine's own SQL: marking calls, releasing leases, exposure, case evidence. The caller
// owns the transaction; all writes are conditional on the lease's fence.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "core/risk.h"
#include "store/sqlite.h"

namespace payorch::store {

// Before a vendor call, in the claim transaction: counts the attempt and, for a submit, marks it
// started (and stamps first_submit_at once). Returns false if the fence no longer matches.
// `claimed`, when given, is the payment as claimed: its counters are brought up to date from
// the row, so the caller need not read it again.
bool record_call_started(Db& db, const std::string& payment_id, std::int64_t fence, bool submit,
                         UnixMillis now, Payment* claimed = nullptr);

// What record_call_started changes, as it was before the claim.
struct CallMarks {
  std::int64_t attempt_count = 0;
  std::optional<UnixMillis> first_submit_at;
  std::optional<UnixMillis> last_submit_started_at;
};

// A claimed call that was never sent (the daemon began to stop between the claim's commit and
// the send, or too little of the lease was left to send it): puts back what record_call_started
// wrote and gives up the lease, due again at `next_attempt_at`. The payment then looks as it
// did before the claim — an unsent submit is never taken for an interrupted one. Returns false
// if the fence no longer matches (someone decided meanwhile; the marks stay, which only makes
// the next claimant recover by key).
bool undo_call_started(Db& db, const std::string& payment_id, std::int64_t fence,
                       const CallMarks& before, UnixMillis next_attempt_at);

// Gives up a lease without a decision (nothing to do now); next look at `next_attempt_at`.
bool release_lease(Db& db, const std::string& payment_id, std::int64_t fence, UnixMillis next_attempt_at);

// Releases every lease `owner` holds (clean shutdown). Returns how many.
int release_leases_of(Db& db, const std::string& owner);

struct ExposureRow {
  std::string provider;
  std::string currency;
  std::int64_t count = 0;
  std::int64_t amount_minor = 0;
  friend bool operator==(const ExposureRow&, const ExposureRow&) = default;
};
// UNKNOWN payments plus submits in flight (started, not ended), per provider and currency, as
// kept by the schema's triggers in the transaction of every change (schema 005): a read of a
// few rows, whatever the number of payments. Rows with nothing exposed are left out.
std::vector<ExposureRow> exposure(Db& db);

// The provider's kept exposure: its count over every currency, its amount in `currency`.
ExposureFigures exposure_of(Db& db, const std::string& provider, const std::string& currency);

// Where the kept figures and a recount from the payments themselves (non-terminal ones only)
// disagree: one line per provider and currency, naming both figures; empty when they agree.
// For checks (payorchd check-exposure, the test layers), never the hot path.
std::vector<std::string> exposure_differences(Db& db);
// The statement behind it, for checks that look at the file through their own connection:
// one row (provider, currency, kept count, kept amount, recounted count, recounted amount) per
// difference.
extern const char* const exposure_difference_query;

// Appends `evidence` to the evidence of the payment's open case, if any.
void append_case_evidence(Db& db, const std::string& payment_id, const boost::json::object& evidence);

}  // namespace payorch::store
