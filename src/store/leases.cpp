#include "store/leases.h"

#include "store/due_heads.h"
#include "store/exposure.h"

#include <algorithm>
#include <tuple>

namespace payorch::store {

std::string due_condition(std::string_view now_param) {
  std::string sql(has_automatic_work);
  sql += " AND next_attempt_at <= ";
  sql += now_param;
  return sql;
}

void keep_oldest_due(std::vector<DueHead>& heads, int max) {
  std::sort(heads.begin(), heads.end(), [](const DueHead& a, const DueHead& b) {
    return std::tie(a.at, a.id) < std::tie(b.at, b.id);
  });
  const auto keep = static_cast<std::size_t>(std::max(max, 0));
  if (heads.size() > keep) heads.resize(keep);
}

std::optional<Lease> claim_lease(Db& db, const std::string& payment_id, const std::string& owner,
                                 UnixMillis now, Millis lease) {
  // The fence grows with every claim, so a worker that lost its lease (paused, partitioned)
  // can never write again: its fence no longer matches (invariant 5). next_attempt_at becomes
  // the lease's expiry: a leased payment is not due work until its lease lapses, so claims never
  // walk over it; every decision that follows sets its own next_attempt_at.
  auto st = db.prepare(
      "UPDATE payments SET lease_owner = ?1, lease_expires_at = ?2, next_attempt_at = ?2,"
      " fence = fence + 1"
      " WHERE id = ?3 AND " + due_condition("?4") +
      "   AND (lease_owner IS NULL OR lease_expires_at <= ?4)"
      " RETURNING state, fence");
  UnixMillis expires = now + lease.count();
  st.bind(1, owner).bind(2, expires).bind(3, payment_id).bind(4, now);
  if (!st.step()) return std::nullopt;
  Lease l{payment_id, parse_payment_state(st.col_text(0)).value_or(PaymentState::processing),
          st.col_int(1), owner, expires};
  st.run();
  return l;
}

std::vector<Lease> claim_due(Db& db, const std::string& owner, UnixMillis now, Millis lease,
                             const std::vector<ClaimQuota>& quotas, int max) {
  // The head of each provider's due work (index payments_due, schema 005), then the oldest due
  // across them: a round costs the rows it could claim, never the payments waiting behind them.
  std::vector<DueHead> due;
  const std::string heads = "SELECT next_attempt_at, id FROM payments WHERE provider = ?1 AND " +
                            due_condition("?2") + " ORDER BY next_attempt_at, id LIMIT ?3";
  for (const auto& q : quotas) {
    const int n = std::min(q.max, max);
    if (n <= 0) continue;
    auto st = db.prepare(heads);
    st.bind(1, q.provider).bind(2, now).bind(3, n);
    while (st.step()) due.push_back({st.col_int(0), st.col_text(1)});
  }
  keep_oldest_due(due, max);
  std::vector<Lease> leases;
  for (const auto& d : due)
    if (auto l = claim_lease(db, d.id, owner, now, lease)) leases.push_back(std::move(*l));
  return leases;
}

bool record_call_started(Db& db, const std::string& payment_id, std::int64_t fence, bool submit,
                         UnixMillis now, Payment* claimed) {
  // Crash timeline: once this commits, a submit counts as "maybe sent" — whoever claims the
  // payment next treats it as UNKNOWN and recovers by the same client_key.
  auto st = db.prepare(
      "UPDATE payments SET attempt_count = attempt_count + 1,"
      " first_submit_at = CASE WHEN ?1 THEN COALESCE(first_submit_at, ?2) ELSE first_submit_at END,"
      " last_submit_started_at = CASE WHEN ?1 THEN ?2 ELSE last_submit_started_at END"
      " WHERE id = ?3 AND fence = ?4"
      " RETURNING attempt_count, first_submit_at, last_submit_started_at");
  st.bind(1, submit ? 1 : 0).bind(2, now).bind(3, payment_id).bind(4, fence);
  if (!st.step()) return false;
  if (claimed) {
    claimed->attempt_count = st.col_int(0);
    claimed->first_submit_at = st.col_opt_int(1);
    claimed->last_submit_started_at = st.col_opt_int(2);
  }
  st.run();  // finishes the statement
  return true;
}

std::vector<StartedCall> start_calls(Db& db, const std::vector<CallStart>& calls, UnixMillis now,
                                     UnixMillis held_until) {
  std::vector<StartedCall> out;
  out.reserve(calls.size());
  for (const auto& c : calls) {
    StartedCall s;
    // The kept exposure already counts the submits started before this one.
    if (c.cap && would_exceed_risk_cap(*c.cap, exposure_of(db, c.provider, c.currency), c.amount_minor)) {
      if (release_lease(db, c.payment_id, c.fence, held_until)) s.result = CallStartResult::held;
    } else {
      Payment marked;
      if (record_call_started(db, c.payment_id, c.fence, c.submit, now, &marked)) {
        s.result = CallStartResult::started;
        s.marks = CallMarks{marked.attempt_count, marked.first_submit_at, marked.last_submit_started_at};
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool undo_call_started(Db& db, const std::string& payment_id, std::int64_t fence,
                       const CallMarks& before, UnixMillis next_attempt_at) {
  db.prepare(
        "UPDATE payments SET attempt_count = ?1, first_submit_at = ?2, last_submit_started_at = ?3,"
        " lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = ?4"
        " WHERE id = ?5 AND fence = ?6")
      .bind(1, before.attempt_count)
      .bind(2, before.first_submit_at)
      .bind(3, before.last_submit_started_at)
      .bind(4, next_attempt_at)
      .bind(5, payment_id)
      .bind(6, fence)
      .run();
  return db.changes() == 1;
}

bool release_lease(Db& db, const std::string& payment_id, std::int64_t fence, UnixMillis next_attempt_at) {
  db.prepare(
        "UPDATE payments SET lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = ?1"
        " WHERE id = ?2 AND fence = ?3")
      .bind(1, next_attempt_at)
      .bind(2, payment_id)
      .bind(3, fence)
      .run();
  return db.changes() == 1;
}

int release_leases_of(Db& db, const std::string& owner) {
  db.prepare("UPDATE payments SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ?")
      .bind(1, owner)
      .run();
  return db.changes();
}

}  // namespace payorch::store
