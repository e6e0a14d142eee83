#include "store/postgres/transitions.h"

#include <stdexcept>

#include "store/postgres/cases.h"
#include "store/postgres/history.h"
#include "store/postgres/payments.h"
#include "store/postgres/refunds.h"
#include "store/transition_flow.h"
#include "store/transition_log.h"

namespace payorch::store::pg {

Applied apply_transition(Connection& conn, const std::string& payment_id,
                         std::optional<std::int64_t> fence, const Transition& t,
                         const TransitionUpdate& u, UnixMillis now, Random& rng,
                         const Db::TransitionObserver* observer) {
  if (!t.noop()) {
    // The compare-and-set and the read-back of the row it wrote, with its refunded payment and
    // latest case, in one statement (the events' views need the row as it now is).
    static const std::string sql =
        "WITH updated AS ("
        " UPDATE payments SET state = $1, next_action = $2, next_attempt_at = $3,"
        " lease_owner = CASE WHEN $4::boolean THEN NULL ELSE lease_owner END,"
        " lease_expires_at = CASE WHEN $4::boolean THEN NULL ELSE lease_expires_at END,"
        " vendor_reference = COALESCE($5, vendor_reference),"
        " failure_code = COALESCE($6, failure_code), failure_message = COALESCE($7, failure_message),"
        " updated_at = $8, last_submit_ended_at = COALESCE($12::bigint, last_submit_ended_at),"
        " vendor_closed_at = COALESCE($13::bigint, vendor_closed_at),"
        // As on SQLite: a writer without a lease fences out any worker whose call is in flight.
        " fence = CASE WHEN $11::bigint IS NULL THEN fence + 1 ELSE fence END"
        " WHERE id = $9 AND state = $10 AND NOT deferred AND ($11::bigint IS NULL OR fence = $11)"
        " RETURNING *) " +
        select_payments_of("updated", "");
    const Result r = conn.exec(
        sql, {to_string(t.to), to_string(t.next), u.next_attempt_at, u.release_lease, u.vendor_reference,
              u.failure_code, u.failure_message, now, payment_id, to_string(t.from), fence,
              u.last_submit_ended_at, u.vendor_closed_at});
    if (r.rows() == 1) {
      // The UPDATE holds the payment's row lock until this transaction ends, so another writer
      // of its cases (lock_payment first) cannot open or close one in between.
      const AppliedStep step =
          record_applied_step(conn, payment_id, fence, t, u, now, rng, read_payment_row(r, 0));
      Applied applied{CasResult::applied, {}};
      if (t.changes_state() || t.open_case)
        applied.announcement = transition_announcement(
            t, step.escalated_too, payment_id, step.row ? step.row->client_key : std::string(),
            step.row ? step.row->fence : std::int64_t{0}, observer);
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

void apply_unleased(const WriteTx& w, const Payment& p, const Transition& t,
                    const TransitionUpdate& u, UnixMillis now, Random& rng) {
  Applied applied = apply_transition(w.conn, p.id, std::nullopt, t, u, now, rng, w.observer);
  if (applied.result != CasResult::applied)
    throw std::runtime_error("payment " + p.id + ": " + std::string(to_string(t.from)) + " -> " +
                             std::string(to_string(t.to)) + ": " +
                             std::string(to_string(applied.result)));
  if (applied.announcement) w.tx.after_commit(std::move(applied.announcement));
}

std::optional<Payment> lock_payment(Connection& conn, const std::string& payment_id) {
  // The lock first, then the whole row by a statement of its own: its snapshot is taken after
  // the lock was granted, so it sees whatever the writer it waited for committed.
  if (conn.exec("SELECT 1 FROM payments WHERE id = $1 FOR UPDATE", {payment_id}).rows() == 0)
    return std::nullopt;
  return find_payment_by_id(conn, payment_id);
}

std::optional<Payment> lock_payment_by_client_key(Connection& conn, const std::string& provider,
                                                  const std::string& client_key) {
  const Result r = conn.exec(
      "SELECT id FROM payments WHERE provider = $1 AND client_key = $2 FOR UPDATE",
      {provider, client_key});
  if (r.rows() == 0) return std::nullopt;
  return find_payment_by_id(conn, r.text(0, 0));
}

}  // namespace payorch::store::pg
