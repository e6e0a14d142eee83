#pragma once
// Leases on PostgreSQL: the same contracts as store/leases.h, on a pg::Connection inside the
// caller's (READ COMMITTED) transaction. They throw pg::Error.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "store/leases.h"
#include "store/postgres/connection.h"

namespace payorch::store::pg {

// As store::claim_due, in one statement, with no lock beyond the rows: each provider's due heads
// are read FOR UPDATE SKIP LOCKED, so several nodes' rounds for one provider run at once and
// each passes over the rows another is taking instead of queueing behind it; each claim is the
// fenced UPDATE of store::claim_lease, which READ COMMITTED re-checks against the latest
// committed row. Each lease carries its payment's whole row as the claim left it (Lease::row).
// Heads read but not claimed (beyond `max`) stay locked until this transaction ends.
std::vector<Lease> claim_due(Connection& conn, const std::string& owner, UnixMillis now, Millis lease,
                             const std::vector<ClaimQuota>& quotas, int max);
// As store::start_calls, in one statement. The risk caps hold exactly across every node without
// a lock that the rounds share: what is left under each cap is room kept in 16 rows
// (risk_room, schema/postgres/007), a capped submit takes its units out of rows no other
// transaction holds, and its payment gives them back to any such row when it leaves the
// exposure (docs/postgres.md, "Risk caps across nodes", says why that is exact).
std::vector<StartedCall> start_calls(Connection& conn, const std::vector<CallStart>& calls,
                                     UnixMillis now, UnixMillis held_until);
bool record_call_started(Connection& conn, const std::string& payment_id, std::int64_t fence,
                         bool submit, UnixMillis now, Payment* claimed);
bool undo_call_started(Connection& conn, const std::string& payment_id, std::int64_t fence,
                       const CallMarks& before, UnixMillis next_attempt_at);
bool release_lease(Connection& conn, const std::string& payment_id, std::int64_t fence,
                   UnixMillis next_attempt_at);
int release_leases_of(Connection& conn, const std::string& owner);

}  // namespace payorch::store::pg
