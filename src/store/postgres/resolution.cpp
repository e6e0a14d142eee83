#include "store/postgres/resolution.h"

#include <stdexcept>

#include "store/postgres/flow_handle.h"
#include "store/resolution_flow.h"

namespace payorch::store::pg {

std::optional<ReconciliationCase> lock_case(const WriteTx& w, const std::string& case_id) {
  const auto unlocked = find_case(w.conn, case_id);
  if (!unlocked) return std::nullopt;
  // The row the case is about (a refund's, for a refund case); it never changes on a case.
  if (const auto& row_id = case_row_id(*unlocked)) lock_payment(w.conn, *row_id);
  w.conn.exec("SELECT 1 FROM reconciliation_cases WHERE id = $1 FOR UPDATE", {case_id});
  return find_case(w.conn, case_id);
}

void close_case(const WriteTx& w, const ReconciliationCase& rc, const Resolution& r,
                UnixMillis now) {
  const Result closed = w.conn.exec(
      "UPDATE reconciliation_cases SET status = 'resolved', resolved_at = $1, outcome = $2,"
      " vendor_reference = $3, note = $4, resolved_by = $5 WHERE id = $6 AND status = 'open'",
      {now, to_string(r.outcome), r.vendor_reference, r.note, r.by, rc.id});
  if (closed.affected() != 1)
    throw std::runtime_error("reconciliation case " + rc.id + " changed under us");
  if (r.evidence) append_evidence(w.conn, rc.id, *r.evidence, now);
}

void start_fresh_budget(const WriteTx& w, const std::string& payment_id, UnixMillis now) {
  w.conn.exec(
      "UPDATE payments SET budget_started_at = $1, budget_attempts_base = attempt_count,"
      " stop_requested_at = NULL"
      " WHERE id = $2",
      {now, payment_id});
}

void request_stop(const WriteTx& w, const std::string& payment_id, UnixMillis now) {
  w.conn.exec("UPDATE payments SET stop_requested_at = $1 WHERE id = $2", {now, payment_id});
}

void clear_failure(const WriteTx& w, const std::string& payment_id) {
  w.conn.exec("UPDATE payments SET failure_code = NULL, failure_message = NULL WHERE id = $1",
              {payment_id});
}

ResolveResult resolve_case(const WriteTx& w, const std::string& case_id, const Resolution& r,
                           const Contract& contract, UnixMillis now, Random& rng) {
  return resolve_case_on(w, case_id, r, contract, now, rng);
}

}  // namespace payorch::store::pg
