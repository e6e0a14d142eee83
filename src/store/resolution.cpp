#include "store/resolution.h"

#include <stdexcept>

#include "core/decide.h"
#include "core/duration.h"
#include "core/enum_names.h"
#include "store/payments.h"
#include "store/transitions.h"

namespace payorch::store {
namespace {

constexpr EnumNames<ResolutionOutcome, 3> outcome_names{{
    {ResolutionOutcome::succeeded, "succeeded"},
    {ResolutionOutcome::failed_final, "failed_final"},
    {ResolutionOutcome::retry, "retry"},
}};

ResolveRefusal refuse(ResolveRefusal::Code code, std::string detail) {
  return ResolveRefusal{code, std::move(detail)};
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

}  // namespace

// Why `retry` may not resume this payment, or nullopt when it may: the engine's own test
// (resubmit_outlives_key), or the vendor may have forgotten the key and charge a second time.
std::optional<std::string> retry_refusal(const Payment& p, const Contract& c, UnixMillis now) {
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

ResolveResult resolve_case(Db& db, const std::string& case_id, const Resolution& r,
                           const Contract& contract, UnixMillis now, Random& rng) {
  using Code = ResolveRefusal::Code;
  auto rc = find_case(db, case_id);
  if (!rc) return refuse(Code::case_not_found, "no reconciliation case " + case_id);
  if (rc->status != CaseStatus::open)
    return refuse(Code::case_not_open, "case " + case_id + " was already resolved (" +
                                           rc->outcome.value_or("?") + ") by " +
                                           rc->resolved_by.value_or("?") + " at " +
                                           format_rfc3339(rc->resolved_at.value_or(0)));
  if (!rc->payment_id) {
    // A charge no payment of ours matched: the operator's decision is the record; there is
    // no payment to change and no tenant to tell.
    if (r.outcome == ResolutionOutcome::retry)
      return refuse(Code::retry_not_allowed,
                    "case " + case_id + " has no payment to retry: " + rc->provider +
                        " reported client_key " + rc->reference.value_or("?") +
                        ", which no payment has; resolve as succeeded or failed_final");
    close_case(db, *rc, r, now);
    Resolved out;
    out.resolved_case = *find_case(db, case_id);
    return out;
  }
  auto p = find_payment_by_id(db, *rc->payment_id);
  if (!p) throw std::runtime_error("case " + case_id + ": payment " + *rc->payment_id + " missing");

  // Decide everything before the first write: a refusal writes nothing.
  std::optional<Transition> t;
  TransitionUpdate u;
  u.next_attempt_at = now;
  u.vendor_reference = r.vendor_reference;
  if (r.outcome == ResolutionOutcome::retry) {
    if (auto why = retry_refusal(*p, contract, now)) return refuse(Code::retry_not_allowed, *why);
    t = resume(p->state, p->vendor_reference.has_value());
    // A lease still held (a case that did not stop automatic work) stays with its holder:
    // releasing it could let a second worker send the same key while the first call is on
    // the wire.
    u.release_lease = false;
  } else {
    const bool success = r.outcome == ResolutionOutcome::succeeded;
    const PaymentState target = success ? PaymentState::succeeded : PaymentState::failed_final;
    // Already there (only a terminal payment can be): the case closes with no write to the
    // payment and no event — nothing about the payment changed.
    if (p->state != target) {
      t = transition(p->state, success ? Trigger::resolve_succeeded : Trigger::resolve_failed_final);
      if (!success) {
        u.failure_code = "reconciliation_failed";
        u.failure_message = "marked failed by reconciliation case " + case_id;
      }
    }
  }
  // resolve_* is legal from every state and resolve_retry from every non-terminal one.
  if (r.outcome == ResolutionOutcome::retry && !t)
    throw std::logic_error("resolve_retry refused from " + std::string(to_string(p->state)));

  // The case closes first, so the outbox event's payment view already shows it resolved.
  close_case(db, *rc, r, now);
  if (t) {
    if (r.outcome == ResolutionOutcome::retry) {
      // A fresh budget: max_attempts and give_up_after count from now. Key retention still
      // counts from first_submit_at (checked above): the vendor's clock does not reset.
      db.prepare(
            "UPDATE payments SET budget_started_at = ?1, budget_attempts_base = attempt_count"
            " WHERE id = ?2")
          .bind(1, now)
          .bind(2, p->id)
          .run();
    } else if (t->to == PaymentState::succeeded) {
      // A failure left from an earlier FAILED_FINAL no longer describes the payment.
      db.prepare("UPDATE payments SET failure_code = NULL, failure_message = NULL WHERE id = ?")
          .bind(1, p->id)
          .run();
    }
    u.next_action = t->next;
    apply_unleased(db, *p, *t, u, now, rng);
  }
  // Crash timeline: nothing above is visible until the caller commits. Dying before the
  // commit leaves the case open and the payment as it was (the operator resolves again);
  // after it, the case, the payment and its outbox event are all there together.
  Resolved out;
  out.resolved_case = *find_case(db, case_id);
  out.payment = *find_payment_by_id(db, p->id);
  if (t) out.event = t->event;
  return out;
}

}  // namespace payorch::store
