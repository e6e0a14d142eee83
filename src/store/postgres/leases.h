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

// The advisory lock class of claim rounds: a claim holds (claim_lock_class, hashtext(provider))
// for each provider it claims for, until its transaction ends. In pg_locks: locktype
// 'advisory', classid 1885436268 ("payl"), objsubid 2. Nothing else may use this class.
inline constexpr std::int32_t claim_lock_class = 0x7061796c;

// As store::claim_due. A claim round also decides, in its own transaction, which submits the
// providers' risk caps allow (engine/steps.cpp): it reads the kept exposure, which READ
// COMMITTED shows as of each statement, without another node's round still in flight. So
// rounds for one provider take its claim lock first and run one at a time across nodes, and
// each sees the submits of the rounds before it (docs/contract.md §3 invariant 8). The vendor
// calls happen after the round commits, outside the lock.
//
// Several nodes may claim at once for different providers: each provider's due heads are read with
// FOR UPDATE SKIP LOCKED, so a claim passes over the rows another claim is taking instead of
// queueing behind it, and each claim is still the fenced UPDATE of store::claim_lease, which
// READ COMMITTED re-checks against the latest committed row. Heads read but not claimed (beyond
// `max`) stay locked until this transaction ends. Each lease carries its payment's whole row as
// the claim left it (Lease::row), read in the claim's own statement.
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
