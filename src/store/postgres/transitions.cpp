#include "store/postgres/transitions.h"

#include <stdexcept>

#include "store/postgres/payments.h"
#include "store/transition_log.h"

namespace payorch::store::pg {

Applied apply_transition(Connection& conn, const std::string& payment_id,
                         std::optional<std::int64_t> fence, const Transition& t,
                         const TransitionUpdate& u, UnixMillis now, Random& rng,
                         const Db::TransitionObserver* observer) {
  if (t.open_case || t.resolves_system_case)
    throw std::logic_error("apply_transition (opening or resolving a case): not built on PostgreSQL yet");
  if (!t.noop()) {
    const Result r = conn.exec(
        "UPDATE payments SET state = $1, next_action = $2, next_attempt_at = $3,"
        " lease_owner = CASE WHEN $4::boolean THEN NULL ELSE lease_owner END,"
        " lease_expires_at = CASE WHEN $4::boolean THEN NULL ELSE lease_expires_at END,"
        " vendor_reference = COALESCE($5, vendor_reference),"
        " failure_code = COALESCE($6, failure_code), failure_message = COALESCE($7, failure_message),"
        " updated_at = $8, last_submit_ended_at = COALESCE($12::bigint, last_submit_ended_at),"
        // As on SQLite: a writer without a lease fences out any worker whose call is in flight.
        " fence = CASE WHEN $11::bigint IS NULL THEN fence + 1 ELSE fence END"
        " WHERE id = $9 AND state = $10 AND ($11::bigint IS NULL OR fence = $11)",
        {to_string(t.to), to_string(t.next), u.next_attempt_at, u.release_lease, u.vendor_reference,
         u.failure_code, u.failure_message, now, payment_id, to_string(t.from), fence,
         u.last_submit_ended_at});
    if (r.affected() == 1) {
      Applied applied{CasResult::applied, {}};
      std::optional<Payment> p;
      if (t.event) {
        p = find_payment_by_id(conn, payment_id);
        insert_outbox_event(conn, *t.event, *p, now, rng);
      }
      if (t.changes_state())
        applied.announcement = transition_announcement(
            t, false, payment_id, p ? p->client_key : std::string(), p ? p->fence : std::int64_t{0},
            observer);
      return applied;
    }
  }
  // 0 rows: classify, never swallow.
  const Result r = conn.exec("SELECT state, fence FROM payments WHERE id = $1", {payment_id});
  if (r.rows() == 0) return {CasResult::not_found, {}};
  if (fence && r.integer(0, 1) != *fence) return {CasResult::stale_fence, {}};
  if (parse_payment_state(r.text(0, 0)) == t.to) return {CasResult::already_in_state, {}};
  return {CasResult::illegal, {}};
}

}  // namespace payorch::store::pg
