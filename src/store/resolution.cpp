#include "store/resolution.h"

#include <stdexcept>

#include "core/decide.h"
#include "core/duration.h"
#include "core/enum_names.h"
#include "store/payments.h"
#include "store/resolution_flow.h"
#include "store/transitions.h"

namespace payorch::store {
namespace {

constexpr EnumNames<ResolutionOutcome, 3> outcome_names{{
    {ResolutionOutcome::succeeded, "succeeded"},
    {ResolutionOutcome::failed_final, "failed_final"},
    {ResolutionOutcome::retry, "retry"},
}};

}  // namespace

std::optional<std::string> retry_refusal(const ReconciliationCase& rc, const Payment* row,
                                         const Contract* contract, UnixMillis now) {
  if (!rc.payment_id)
    return "case " + rc.id + " has no payment to retry: " + rc.provider + " reported client_key " +
           rc.reference.value_or("?") + ", which no payment has; resolve as succeeded or failed_final";
  if (row == nullptr)
    return "case " + rc.id + ": its " + (rc.refund_id ? "refund" : "payment") +
           " cannot be read; resolve as succeeded or failed_final";
  if (contract == nullptr)
    return "provider " + rc.provider + " is not configured: nothing could retry the payment";
  const Payment& p = *row;
  const Contract& c = *contract;
  if (is_terminal(p.state))
    return "payment " + p.id + " is " + std::string(to_string(p.state)) +
           ": a terminal payment cannot be retried; resolve as succeeded or failed_final";
  if (!resubmit_outlives_key(p.first_submit_at, c, now)) return std::nullopt;
  const UnixMillis deadline = resubmit_deadline(*p.first_submit_at, c);
  const UnixMillis latest_end = resubmit_latest_end(c, now);
  return "the vendor may no longer honour client_key " + p.client_key + ": first sent at " +
         format_rfc3339(*p.first_submit_at) + ", key retention " +
         format_duration(c.key_retention) + ", so a retry had to end by " +
         format_rfc3339(deadline) + " and one started now could run until " +
         format_rfc3339(latest_end) +
         "; a retry could charge twice. Check the payment with the vendor and resolve it as "
         "succeeded or failed_final";
}

std::string_view to_string(ResolutionOutcome o) { return name_of(outcome_names, o); }

std::optional<ResolutionOutcome> parse_resolution_outcome(std::string_view s) {
  return value_of(outcome_names, s);
}

void close_case(Db& db, const ReconciliationCase& rc, const Resolution& r, UnixMillis now) {
  auto st = db.prepare(
      "UPDATE reconciliation_cases SET status = 'resolved', resolved_at = ?1, outcome = ?2,"
      " vendor_reference = ?3, note = ?4, resolved_by = ?5 WHERE id = ?6 AND status = 'open'");
  st.bind(1, now).bind(2, to_string(r.outcome)).bind(3, r.vendor_reference).bind(4, r.note);
  st.bind(5, r.by).bind(6, rc.id);
  st.run();
  if (db.changes() != 1) throw std::runtime_error("reconciliation case " + rc.id + " changed under us");
  if (r.evidence) append_evidence(db, rc.id, *r.evidence, now);
}

void start_fresh_budget(Db& db, const std::string& payment_id, UnixMillis now) {
  db.prepare(
        "UPDATE payments SET budget_started_at = ?1, budget_attempts_base = attempt_count,"
        " stop_requested_at = NULL"
        " WHERE id = ?2")
      .bind(1, now)
      .bind(2, payment_id)
      .run();
}

void request_stop(Db& db, const std::string& payment_id, UnixMillis now) {
  db.prepare("UPDATE payments SET stop_requested_at = ?1 WHERE id = ?2").bind(1, now).bind(2, payment_id).run();
}

void clear_failure(Db& db, const std::string& payment_id) {
  db.prepare("UPDATE payments SET failure_code = NULL, failure_message = NULL WHERE id = ?")
      .bind(1, payment_id)
      .run();
}

ResolveResult resolve_case(Db& db, const std::string& case_id, const Resolution& r,
                           const Contract& contract, UnixMillis now, Random& rng) {
  return resolve_case_on(db, case_id, r, contract, now, rng);
}

}  // namespace payorch::store
