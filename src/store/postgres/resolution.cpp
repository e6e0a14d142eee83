#include "store/postgres/resolution.h"

#include <stdexcept>

#include "core/duration.h"
#include "store/postgres/cases.h"
#include "store/postgres/payments.h"

namespace payorch::store::pg {
namespace {

ResolveRefusal refuse(ResolveRefusal::Code code, std::string detail) {
  return ResolveRefusal{code, std::move(detail)};
}

// The case, locked: the payment's row first when it has one (the order every writer of a
// payment's cases takes), then the case's. Read again after the locks, so its status is the
// latest committed one.
std::optional<ReconciliationCase> lock_case(Connection& conn, const std::string& case_id) {
  const auto unlocked = find_case(conn, case_id);
  if (!unlocked) return std::nullopt;
  if (unlocked->payment_id) lock_payment(conn, *unlocked->payment_id);  // never changes on a case
  conn.exec("SELECT 1 FROM reconciliation_cases WHERE id = $1 FOR UPDATE", {case_id});
  return find_case(conn, case_id);
}

void close_case(Connection& conn, const ReconciliationCase& rc, const Resolution& r, UnixMillis now) {
  const Result closed = conn.exec(
      "UPDATE reconciliation_cases SET status = 'resolved', resolved_at = $1, outcome = $2,"
      " vendor_reference = $3, note = $4, resolved_by = $5 WHERE id = $6 AND status = 'open'",
      {now, to_string(r.outcome), r.vendor_reference, r.note, r.by, rc.id});
  if (closed.affected() != 1)
    throw std::runtime_error("reconciliation case " + rc.id + " changed under us");
  if (r.evidence) append_evidence(conn, rc.id, *r.evidence, now);
}

}  // namespace

ResolveResult resolve_case(const WriteTx& w, const std::string& case_id, const Resolution& r,
                           const Contract& contract, UnixMillis now, Random& rng) {
  using Code = ResolveRefusal::Code;
  auto rc = lock_case(w.conn, case_id);
  if (!rc) return refuse(Code::case_not_found, "no reconciliation case " + case_id);
  if (rc->status != CaseStatus::open)
    return refuse(Code::case_not_open, "case " + case_id + " was already resolved (" +
                                           rc->outcome.value_or("?") + ") by " +
                                           rc->resolved_by.value_or("?") + " at " +
                                           format_rfc3339(rc->resolved_at.value_or(0)));
  if (!rc->payment_id) {
    if (r.outcome == ResolutionOutcome::retry)
      return refuse(Code::retry_not_allowed,
                    "case " + case_id + " has no payment to retry: " + rc->provider +
                        " reported client_key " + rc->reference.value_or("?") +
                        ", which no payment has; resolve as succeeded or failed_final");
    close_case(w.conn, *rc, r, now);
    Resolved out;
    out.resolved_case = *find_case(w.conn, case_id);
    return out;
  }
  auto p = find_payment_by_id(w.conn, *rc->payment_id);
  if (!p) throw std::runtime_error("case " + case_id + ": payment " + *rc->payment_id + " missing");

  // Decide everything before the first write: a refusal writes nothing.
  std::optional<Transition> t;
  TransitionUpdate u;
  u.next_attempt_at = now;
  u.vendor_reference = r.vendor_reference;
  if (r.outcome == ResolutionOutcome::retry) {
    if (auto why = retry_refusal(*p, contract, now)) return refuse(Code::retry_not_allowed, *why);
    t = resume(p->state, p->vendor_reference.has_value());
    // A lease still held stays with its holder (store/resolution.cpp says why).
    u.release_lease = false;
  } else {
    const bool success = r.outcome == ResolutionOutcome::succeeded;
    const PaymentState target = success ? PaymentState::succeeded : PaymentState::failed_final;
    if (p->state != target) {
      t = transition(p->state, success ? Trigger::resolve_succeeded : Trigger::resolve_failed_final);
      if (!success) {
        u.failure_code = "reconciliation_failed";
        u.failure_message = "marked failed by reconciliation case " + case_id;
      }
    }
  }
  if (r.outcome == ResolutionOutcome::retry && !t)
    throw std::logic_error("resolve_retry refused from " + std::string(to_string(p->state)));

  // The case closes first, so the outbox event's payment view already shows it resolved.
  close_case(w.conn, *rc, r, now);
  if (t) {
    if (r.outcome == ResolutionOutcome::retry) {
      // A fresh budget from now; key retention still counts from first_submit_at.
      w.conn.exec(
          "UPDATE payments SET budget_started_at = $1, budget_attempts_base = attempt_count"
          " WHERE id = $2",
          {now, p->id});
    } else if (t->to == PaymentState::succeeded) {
      w.conn.exec("UPDATE payments SET failure_code = NULL, failure_message = NULL WHERE id = $1",
                  {p->id});
    }
    u.next_action = t->next;
    apply_unleased(w, *p, *t, u, now, rng);
  }
  // Crash timeline: nothing above is visible until the caller commits. Dying before the commit
  // leaves the case open and the payment as it was; after it, the case, the payment and its
  // outbox event are all there together.
  Resolved out;
  out.resolved_case = *find_case(w.conn, case_id);
  out.payment = *find_payment_by_id(w.conn, p->id);
  if (t) out.event = t->event;
  return out;
}

}  // namespace payorch::store::pg
