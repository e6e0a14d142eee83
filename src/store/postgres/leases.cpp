#include "store/postgres/leases.h"

#include <algorithm>
#include <unordered_map>

#include "store/postgres/payments.h"

namespace payorch::store::pg {

std::vector<Lease> claim_due(Connection& conn, const std::string& owner, UnixMillis now, Millis lease,
                             const std::vector<ClaimQuota>& quotas, int max) {
  std::vector<std::string> providers;
  std::vector<std::int64_t> limits;
  for (const auto& q : quotas) {
    const int n = std::min(q.max, max);
    if (n <= 0) continue;
    providers.push_back(q.provider);
    limits.push_back(n);
  }
  if (providers.empty()) return {};
  // One statement. As on SQLite, the head of each provider's due work (payments_due) up to its
  // quota, then the oldest due across them (store/due_heads.h); each head is read FOR UPDATE
  // SKIP LOCKED, so the rounds of several nodes pass over one another's rows instead of
  // queueing. Then the claims of store::claim_lease: the fence grows with every claim
  // (invariant 5), next_attempt_at becomes the lease's expiry (a leased payment is not due
  // before its lease lapses), and READ COMMITTED re-checks the due condition and the lapsed
  // lease against the latest committed row. The whole rows come back as claimed, oldest due
  // first, so the round need not read them again.
  const std::string due = due_condition("$3");
  const UnixMillis expires = now + lease.count();
  const Result r = conn.exec(
      "WITH heads AS ("
      " SELECT h.id, h.due_at FROM unnest($1::text[], $2::bigint[]) AS q (provider, n)"
      " CROSS JOIN LATERAL (SELECT id, next_attempt_at AS due_at FROM payments"
      "   WHERE provider = q.provider AND " + due +
      "   ORDER BY next_attempt_at, id LIMIT q.n FOR UPDATE SKIP LOCKED) AS h"
      " ORDER BY h.due_at, h.id LIMIT $4),"
      " claimed AS ("
      " UPDATE payments SET lease_owner = $5, lease_expires_at = $6, next_attempt_at = $6,"
      "   fence = payments.fence + 1"
      " FROM heads WHERE payments.id = heads.id AND " + due +
      "   AND (lease_owner IS NULL OR lease_expires_at <= $3)"
      " RETURNING payments.*, heads.due_at) " +
      select_payments_of("claimed", "ORDER BY p.due_at, p.id"),
      {text_array(providers), number_array(limits), now, max, owner, expires});
  std::vector<Lease> leases;
  leases.reserve(static_cast<std::size_t>(r.rows()));
  for (int row = 0; row < r.rows(); ++row) {
    Payment p = read_payment_row(r, row);
    std::string id = p.id;
    const PaymentState state = p.state;
    const std::int64_t fence = p.fence;
    leases.push_back(Lease{std::move(id), state, fence, owner, expires, std::move(p)});
  }
  return leases;
}

std::vector<StartedCall> start_calls(Connection& conn, const std::vector<CallStart>& calls,
                                     UnixMillis now, UnixMillis held_until) {
  if (calls.empty()) return {};
  std::vector<std::string> ids, providers, currencies;
  std::vector<std::int64_t> ords, fences, amounts, max_counts, max_amounts;
  std::vector<bool> submits, capped;
  for (const auto& c : calls) {
    ords.push_back(static_cast<std::int64_t>(ords.size()));
    ids.push_back(c.payment_id);
    fences.push_back(c.fence);
    submits.push_back(c.submit);
    capped.push_back(c.cap.has_value());
    providers.push_back(c.provider);
    currencies.push_back(c.currency);
    amounts.push_back(c.amount_minor);
    max_counts.push_back(c.cap ? c.cap->max_unknown_count : 0);
    max_amounts.push_back(c.cap ? c.cap->max_unknown_amount_minor : 0);
  }
  // One statement for the round's calls. `taken` takes each capped submit out of the room left
  // under its caps, in the order of `calls` (schema/postgres/007: payorch_risk_take_submit,
  // false when a cap holds it back), only for a payment whose fence still matches and that is
  // not counted already (a payment still taken is never taken twice); the UPDATE then marks
  // the calls started as record_call_started does, notes which payments were taken, and gives
  // up the lease of each one held back. The round holds every row's lock since its claim, so
  // each row is written.
  // Crash timeline: nothing is sent before this commits; once it has, each submit counts as
  // "maybe sent" and in the caps, until an outcome (or whoever claims it next) takes it out.
  const Result r = conn.exec(
      "WITH taken AS MATERIALIZED ("
      " SELECT c.id, c.fence, c.submit, c.capped, CASE WHEN c.capped AND NOT p.risk_taken THEN"
      "   payorch_risk_take_submit(c.provider, c.currency, c.amount, c.max_count, c.max_amount)"
      "   ELSE true END AS took"
      " FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::boolean[], $5::boolean[],"
      "             $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[])"
      "   AS c (ord, id, fence, submit, capped, provider, currency, amount, max_count, max_amount)"
      " JOIN payments p ON p.id = c.id AND p.fence = c.fence"
      " ORDER BY c.ord),"
      " calls AS (SELECT *, capped AND NOT took AS held FROM taken)"
      " UPDATE payments p SET"
      "  attempt_count = p.attempt_count + CASE WHEN c.held THEN 0 ELSE 1 END,"
      "  first_submit_at = CASE WHEN c.submit AND NOT c.held THEN COALESCE(p.first_submit_at, $11)"
      "                    ELSE p.first_submit_at END,"
      "  last_submit_started_at = CASE WHEN c.submit AND NOT c.held THEN $11"
      "                           ELSE p.last_submit_started_at END,"
      "  risk_taken = p.risk_taken OR (c.capped AND c.took),"
      "  lease_owner = CASE WHEN c.held THEN NULL ELSE p.lease_owner END,"
      "  lease_expires_at = CASE WHEN c.held THEN NULL ELSE p.lease_expires_at END,"
      "  next_attempt_at = CASE WHEN c.held THEN $12 ELSE p.next_attempt_at END"
      " FROM calls c WHERE p.id = c.id AND p.fence = c.fence"
      " RETURNING p.id, c.held, p.attempt_count, p.first_submit_at, p.last_submit_started_at",
      {number_array(ords), text_array(ids), number_array(fences), bool_array(submits),
       bool_array(capped), text_array(providers), text_array(currencies), number_array(amounts),
       number_array(max_counts), number_array(max_amounts), now, held_until});
  std::unordered_map<std::string, StartedCall> by_id;
  for (int row = 0; row < r.rows(); ++row) {
    StartedCall s;
    s.result = r.text(row, 1) == "t" ? CallStartResult::held : CallStartResult::started;
    s.marks = CallMarks{r.integer(row, 2), r.opt_integer(row, 3), r.opt_integer(row, 4)};
    by_id.emplace(r.text(row, 0), s);
  }
  std::vector<StartedCall> out;
  out.reserve(calls.size());
  for (const auto& c : calls) {
    const auto at = by_id.find(c.payment_id);
    out.push_back(at == by_id.end() ? StartedCall{} : at->second);
  }
  return out;
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
