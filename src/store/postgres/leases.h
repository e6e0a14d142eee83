#pragma once
// Leases on PostgreSQL: the same contracts as store/leases.h, on a pg::Connection inside the
// caller's (READ COMMITTED) transaction. They throw pg::Error.
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "store/leases.h"
#include "store/postgres/connection.h"

namespace payorch::store::pg {

// As store::claim_due. Several nodes may claim at once: each provider's due heads are read with
// FOR UPDATE SKIP LOCKED, so a claim passes over the rows another claim is taking instead of
// queueing behind it, and each claim is still the fenced UPDATE of store::claim_lease, which
// READ COMMITTED re-checks against the latest committed row. Heads read but not claimed (beyond
// `max`) stay locked until this transaction ends.
std::vector<Lease> claim_due(Connection& conn, const std::string& owner, UnixMillis now, Millis lease,
                             const std::vector<ClaimQuota>& quotas, int max);
bool record_call_started(Connection& conn, const std::string& payment_id, std::int64_t fence,
                         bool submit, UnixMillis now, Payment* claimed);
bool undo_call_started(Connection& conn, const std::string& payment_id, std::int64_t fence,
                       const CallMarks& before, UnixMillis next_attempt_at);
bool release_lease(Connection& conn, const std::string& payment_id, std::int64_t fence,
                   UnixMillis next_attempt_at);
int release_leases_of(Connection& conn, const std::string& owner);

}  // namespace payorch::store::pg
