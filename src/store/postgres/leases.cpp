#include "store/postgres/leases.h"

#include <algorithm>
#include <unordered_map>

#include "store/due_heads.h"
#include "store/postgres/payments.h"

namespace payorch::store::pg {
namespace {

// store::claim_lease for each of `due` in one statement: the fence grows with every claim
// (invariant 5), and next_attempt_at becomes the lease's expiry, so a leased payment is not due
// work until its lease lapses. One round trip for the round's claims, however many, which also
// returns each claimed row whole (with its refunded payment and latest case) in its Lease, so the
// round need not read them again. The leases come back in the order of `due`; a payment that is no longer
// claimable is left out.
std::vector<Lease> claim_leases(Connection& conn, const std::vector<DueHead>& due,
                                const std::string& owner, UnixMillis now, Millis lease) {
  if (due.empty()) return {};
  std::vector<std::string> ids;
  ids.reserve(due.size());
  for (const auto& d : due) ids.push_back(d.id);
  const UnixMillis expires = now + lease.count();
  const Result r = conn.exec(
      "WITH claimed AS ("
      " UPDATE payments SET lease_owner = $1, lease_expires_at = $2, next_attempt_at = $2,"
      " fence = fence + 1"
      " WHERE id = ANY($3::text[]) AND " + due_condition("$4") +
      "   AND (lease_owner IS NULL OR lease_expires_at <= $4)"
      " RETURNING *) " + select_payments_of("claimed", ""),
      {owner, expires, text_array(ids), now});
  std::unordered_map<std::string, int> row_of;
  for (int row = 0; row < r.rows(); ++row) row_of.emplace(r.text(row, 0), row);
  std::vector<Lease> leases;
  leases.reserve(row_of.size());
  for (const auto& d : due) {
    const auto at = row_of.find(d.id);
    if (at == row_of.end()) continue;
    Payment p = read_payment_row(r, at->second);
    row_of.erase(at);  // an id twice in `due` is claimed once, as one UPDATE per id did
    const PaymentState state = p.state;
    const std::int64_t fence = p.fence;
    leases.push_back(Lease{d.id, state, fence, owner, expires, std::move(p)});
  }
  return leases;
}

}  // namespace

std::vector<Lease> claim_due(Connection& conn, const std::string& owner, UnixMillis now, Millis lease,
                             const std::vector<ClaimQuota>& quotas, int max) {
  // One claim at a time per provider across nodes (claim_lock_class): the round's risk-cap
  // checks then see every other round's submits. Taken in name order, so that two rounds over
  // the same providers cannot deadlock on them.
  std::vector<std::string> providers;
  for (const auto& q : quotas)
    if (std::min(q.max, max) > 0) providers.push_back(q.provider);
  std::sort(providers.begin(), providers.end());
  providers.erase(std::unique(providers.begin(), providers.end()), providers.end());
  for (const auto& provider : providers)
    conn.exec("SELECT pg_advisory_xact_lock($1::integer, hashtext($2))", {claim_lock_class, provider});
  // As on SQLite: the head of each provider's due work (payments_due), then the oldest due
  // across them.
  std::vector<DueHead> due;
  const std::string heads = "SELECT next_attempt_at, id FROM payments WHERE provider = $1 AND " +
                            due_condition("$2") +
                            " ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED";
  for (const auto& q : quotas) {
    const int n = std::min(q.max, max);
    if (n <= 0) continue;
    const Result r = conn.exec(heads, {q.provider, now, n});
    for (int row = 0; row < r.rows(); ++row) due.push_back({r.integer(row, 0), r.text(row, 1)});
  }
  keep_oldest_due(due, max);
  return claim_leases(conn, due, owner, now, lease);
}

bool record_call_started(Connection& conn, const std::string& payment_id, std::int64_t fence,
                         bool submit, UnixMillis now, Payment* claimed) {
  // Crash timeline: once this commits, a submit counts as "maybe sent" — whoever claims the
  // payment next treats it as UNKNOWN and recovers by the same client_key.
  const Result r = conn.exec(
      "UPDATE payments SET attempt_count = attempt_count + 1,"
      " first_submit_at = CASE WHEN $1::boolean THEN COALESCE(first_submit_at, $2::bigint)"
      "                   ELSE first_submit_at END,"
      " last_submit_started_at = CASE WHEN $1::boolean THEN $2::bigint ELSE last_submit_started_at END"
      " WHERE id = $3 AND fence = $4"
      " RETURNING attempt_count, first_submit_at, last_submit_started_at",
      {submit, now, payment_id, fence});
  if (r.rows() == 0) return false;
  if (claimed) {
    claimed->attempt_count = r.integer(0, 0);
    claimed->first_submit_at = r.opt_integer(0, 1);
    claimed->last_submit_started_at = r.opt_integer(0, 2);
  }
  return true;
}

bool undo_call_started(Connection& conn, const std::string& payment_id, std::int64_t fence,
                       const CallMarks& before, UnixMillis next_attempt_at) {
  return conn.exec(
             "UPDATE payments SET attempt_count = $1, first_submit_at = $2,"
             " last_submit_started_at = $3, lease_owner = NULL, lease_expires_at = NULL,"
             " next_attempt_at = $4 WHERE id = $5 AND fence = $6",
             {before.attempt_count, before.first_submit_at, before.last_submit_started_at,
              next_attempt_at, payment_id, fence})
             .affected() == 1;
}

bool release_lease(Connection& conn, const std::string& payment_id, std::int64_t fence,
                   UnixMillis next_attempt_at) {
  return conn.exec(
             "UPDATE payments SET lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = $1"
             " WHERE id = $2 AND fence = $3",
             {next_attempt_at, payment_id, fence})
             .affected() == 1;
}

int release_leases_of(Connection& conn, const std::string& owner) {
  return static_cast<int>(
      conn.exec("UPDATE payments SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1",
                {owner})
          .affected());
}

}  // namespace payorch::store::pg
