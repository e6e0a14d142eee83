#include "engine/steps.h"

#include <boost/json/object.hpp>

#include <algorithm>

#include "core/expect.h"
#include "store/payments.h"
#include "store/leases.h"
#include "store/transitions.h"
#include "store/cases.h"
#include "store/exposure.h"
#include "util/log.h"

namespace payorch::engine {
namespace {

Progress progress_of(const Payment& p) {
  Progress pr;
  pr.state = p.state;
  pr.next_action = p.next_action;
  pr.attempt_count = p.attempt_count;
  pr.first_submit_at = p.first_submit_at;
  pr.last_submit_ended_at = p.last_submit_ended_at;
  pr.budget_started_at = p.budget_started_at;
  pr.budget_attempts_base = p.budget_attempts_base;
  pr.vendor_closed_at = p.vendor_closed_at;
  pr.stop_requested = p.stop_requested_at.has_value();
  pr.refund = p.refund_of.has_value();
  return pr;
}

bool submit_in_flight(const Payment& p) {
  return p.last_submit_started_at &&
         (!p.last_submit_ended_at || *p.last_submit_started_at > *p.last_submit_ended_at);
}

boost::json::object evidence(std::string_view source, const Payment& p, std::string_view what,
                             const std::string& detail, UnixMillis now) {
  return boost::json::object{{"at", format_rfc3339(now)},
                             {"source", source},
                             {"what", what},
                             {"attempt_count", p.attempt_count},
                             {"detail", detail}};
}

// A vendor answer as case evidence: what it said, under which lease, and the vendor's own
// reference for the charge, which an operator needs before resolving the case either way.
boost::json::object vendor_evidence(const Payment& claimed, std::int64_t fence,
                                    const providers::VendorResult& result, UnixMillis now) {
  auto e = evidence("vendor", claimed, to_string(result.outcome), result.detail, now);
  e["fence"] = fence;
  if (result.vendor_reference) e["vendor_reference"] = *result.vendor_reference;
  if (result.decline_code) e["decline_code"] = *result.decline_code;
  return e;
}

void log_cas(const Payment& p, std::int64_t fence, std::string_view what, store::CasResult r) {
  if (r == store::CasResult::applied || r == store::CasResult::already_in_state) return;
  // A stale worker's decision is discarded by design (invariant 5): a lost race, normal under
  // load and after a lease change, logged at info (never silently); an illegal transition is a bug.
  const bool stale = r == store::CasResult::stale_fence;
  log::write(stale ? log::Level::info : log::Level::error, "engine.cas_refused",
             stale ? "a newer lease holder or writer decided meanwhile: this decision is discarded"
                   : "the transition does not apply to the payment's current state: refused",
             {{"payment_id", p.id},
              {"client_key", p.client_key},
              {"fence", fence},
              {"trigger", what},
              {"result", store::to_string(r)}});
}

// The outcome's CAS was refused (illegal or stale_fence: someone decided meanwhile): a final
// vendor answer is judged against the current state. Returns `refused` when there is nothing to
// judge (not a final answer, or the payment is not terminal).
store::CasResult reconcile_with_current(store::Tx& tx, const Payment& claimed, std::int64_t fence,
                                        Trigger trigger, const providers::VendorResult& result,
                                        UnixMillis now, store::CasResult refused, Random& rng,
                                        Metrics* metrics) {
  std::optional<Trigger> answer;
  if (trigger == Trigger::submit_succeeded || trigger == Trigger::recovery_succeeded)
    answer = Trigger::recovery_succeeded;
  if (trigger == Trigger::submit_declined || trigger == Trigger::recovery_declined)
    answer = Trigger::recovery_declined;
  auto current = tx.find_payment_by_id(claimed.id);
  // Not a final answer (pending, inconclusive, ...): the engine's view is simply out of date.
  // Nothing to apply; the next claim starts afresh.
  if (!current || !answer) return refused;
  if (!is_terminal(current->state)) {
    // Held in a case (a callback mismatch, an operator's hold) while the call was out: the
    // vendor's final word is not applied over a human's case, but the case must show it, so
    // nobody resolves failed_final without seeing that the vendor said succeeded.
    tx.append_open_case_evidence(current->id, vendor_evidence(claimed, fence, result, now), now);
    return refused;
  }
  const Transition t = expect(transition(current->state, *answer),
                               "a vendor's final answer to be legal on a terminal payment");
  if (t.noop()) return store::CasResult::already_in_state;
  if (metrics) metrics->inc("payorch_late_contradictions_total", {{"provider", current->provider}});
  log::alert("engine.late_contradiction", "the vendor contradicts a terminal payment: " + result.detail,
             {{"payment_id", current->id},
              {"client_key", current->client_key},
              {"fence", fence},
              {"provider", current->provider},
              {"state", to_string(current->state)},
              {"vendor_outcome", to_string(result.outcome)}});
  // A case already open for the payment gets the answer as evidence; otherwise the
  // late_contradiction case opens with it (one payment.escalated at most).
  tx.hold_with_evidence(*current, t, vendor_evidence(claimed, fence, result, now), now, rng);
  return store::CasResult::applied;
}

// The caps a submit of `p` is held to, if it takes `p` into the exposure (a PROCESSING payment;
// a replay from UNKNOWN is already counted) and its provider has any.
std::optional<RiskCap> cap_of(const ClaimRound& r, const Payment& p, bool submit) {
  if (!submit || p.state != PaymentState::processing || !r.caps) return std::nullopt;
  auto cap = r.caps->find(p.provider);
  if (cap == r.caps->end()) return std::nullopt;
  return cap->second;
}

}  // namespace

bool fence_wanted(const Payment& p, CaseReason reason) {
  if (p.refund_of || !p.first_submit_at) return false;
  return reason == CaseReason::retry_budget_exhausted || reason == CaseReason::key_retention_expiring ||
         reason == CaseReason::unrecoverable_contract;
}

boost::json::object fence_evidence(const Payment& p, CaseReason reason,
                                   const providers::VendorResult& result, UnixMillis now) {
  auto e = evidence("vendor_fence", p, to_string(result.outcome), result.detail, now);
  e["case_reason"] = to_string(reason);
  e["http_status"] = result.http_status;
  if (result.vendor_reference) e["vendor_reference"] = *result.vendor_reference;
  return e;
}

std::vector<FenceCall> fences_owed(store::Tx& tx, const std::vector<std::string>& fenced_providers, int max) {
  std::vector<FenceCall> out;
  if (fenced_providers.empty()) return out;
  std::optional<std::string> cursor;
  do {
    store::CasePage page = tx.list_cases(store::CaseStatus::open, 200, cursor);
    cursor = page.next_cursor;
    for (const auto& c : page.cases) {
      if (static_cast<int>(out.size()) >= max) return out;
      if (!c.payment_id || c.refund_id) continue;
      if (std::find(fenced_providers.begin(), fenced_providers.end(), c.provider) == fenced_providers.end())
        continue;
      const auto reason = parse_case_reason(c.reason);
      if (!reason) continue;
      const bool fenced = std::any_of(c.evidence.begin(), c.evidence.end(), [](const boost::json::value& e) {
        const auto* o = e.if_object();
        const auto* source = o ? o->if_contains("source") : nullptr;
        return source && source->is_string() && source->get_string() == "vendor_fence";
      });
      if (fenced) continue;
      auto p = tx.find_payment_by_id(*c.payment_id);
      if (!p || is_terminal(p->state) || !fence_wanted(*p, *reason)) continue;
      out.push_back(FenceCall{std::move(*p), *reason});
    }
  } while (cursor);
  return out;
}

providers::ChargeRequest charge_of(const Payment& p) {
  return providers::ChargeRequest{p.client_key, p.amount_minor, p.currency, p.payee, p.source};
}

providers::RefundRequest refund_request_of(const Payment& refund) {
  providers::RefundRequest r;
  r.client_key = refund.client_key;
  if (refund.refund_of) {
    r.charge_reference = refund.refund_of->vendor_reference.value_or("");
    r.charge_client_key = refund.refund_of->client_key;
  }
  r.amount_minor = refund.amount_minor;
  r.currency = refund.currency;
  return r;
}

std::vector<Call> claim_round(store::Tx& tx, const ClaimRound& r, Random& rng,
                              std::vector<FenceCall>* fences) {
  std::vector<Call> out;
  const UnixMillis now = r.now;
  std::vector<Call> planned;
  std::vector<store::CallStart> starts;
  for (auto& lease : tx.claim_due(r.owner, now, r.lease, r.quotas, r.max)) {
    // The row as the claim left it, when the claim returned it: the claim holds its lock, and
    // nothing this round does to another payment (its lease, call marks, transition, case)
    // changes this one's row.
    auto p = lease.row ? std::move(lease.row) : tx.find_payment_by_id(lease.payment_id);
    auto contract = r.contracts->find(p->provider);
    if (contract == r.contracts->end()) {
      // No contract for its provider (a quota the caller should not have given): leave it
      // alone, look again later.
      tx.release_lease(p->id, lease.fence, now + 60'000);
      continue;
    }
    const Contract& c = contract->second;
    if (p->state == PaymentState::processing && submit_in_flight(*p)) {
      // The last submit started and never reported back (its worker died, or lost its lease
      // mid-call; the lease outlives the request timeout, so that call is over). Whether it
      // charged is unknown: recover by the same client_key.
      const Transition t = expect(transition(p->state, Trigger::submit_ambiguous),
                                   "submit_ambiguous to be legal from PROCESSING");
      store::TransitionUpdate u;
      u.next_attempt_at = lease.expires_at;  // leased: not due again before the lease lapses
      u.release_lease = false;
      u.last_submit_ended_at = now;
      log_cas(*p, lease.fence, "interrupted submit", tx.apply_transition(p->id, lease.fence, t, u, now, rng));
      p = tx.find_payment_by_id(lease.payment_id);
      expect(p, "the leased payment to be still there");
    }
    Plan pl = plan(progress_of(*p), c, now);
    switch (pl.kind) {
      case Plan::Kind::nothing:  // not due for automatic work: look again later
        tx.release_lease(p->id, lease.fence, now + r.poll_interval.count() * 2);
        continue;
      case Plan::Kind::wait:
        tx.release_lease(p->id, lease.fence, pl.next_attempt_at);
        continue;
      case Plan::Kind::give_up: {
        const Transition t = expect(transition(p->state, Trigger::give_up, pl.reason),
                                     "give_up to be legal from the non-terminal state plan() saw");
        store::TransitionUpdate u;
        u.next_attempt_at = now;
        const store::CasResult given_up = tx.apply_transition(p->id, lease.fence, t, u, now, rng);
        log_cas(*p, lease.fence, "give up", given_up);
        tx.append_open_case_evidence(p->id, evidence("engine", *p, to_string(pl.reason), "automatic work stopped", now), now);
        if (fences && given_up == store::CasResult::applied && fence_wanted(*p, pl.reason))
          fences->push_back(FenceCall{*p, pl.reason});
        continue;
      }
      case Plan::Kind::call:
        break;
    }
    const bool submit = pl.call == CallKind::submit;
    starts.push_back(store::CallStart{p->id, lease.fence, submit, cap_of(r, *p, submit), p->provider,
                                      p->currency, p->amount_minor});
    const store::CallMarks before{p->attempt_count, p->first_submit_at, p->last_submit_started_at};
    Call call{std::move(*p), lease.fence, pl.call, c, before, std::nullopt};
    if (pl.stopping) call.stopping = pl.reason;
    planned.push_back(std::move(call));
  }
  // Marks the calls started, in due order. A submit that would take its provider over a risk
  // cap is held back instead: unsent payments wait; recovery of UNKNOWN ones goes on. Each
  // submit started counts against the caps before the next one is judged.
  const auto started = tx.start_calls(starts, now, now + r.poll_interval.count() * 2);
  for (std::size_t i = 0; i < planned.size(); ++i) {
    if (started[i].result != store::CallStartResult::started) continue;
    Call& call = planned[i];
    call.payment.attempt_count = started[i].marks.attempt_count;
    call.payment.first_submit_at = started[i].marks.first_submit_at;
    call.payment.last_submit_started_at = started[i].marks.last_submit_started_at;
    out.push_back(std::move(call));
  }
  return out;
}

bool fits_in_lease(const Call& call, UnixMillis now) {
  const auto& expires = call.payment.lease_expires_at;
  return expires && now + call.contract.call_time().count() <= *expires;
}

void unclaim(store::Tx& tx, const Call& call, UnixMillis now) {
  tx.undo_call_started(call.payment.id, call.fence, call.before, now);
}

store::CasResult record_outcome(store::Tx& tx, const Call& w, const providers::VendorResult& result,
                                UnixMillis now, double jitter, Random& rng, Metrics* metrics,
                                std::vector<FenceCall>* fences) {
  const Payment& p = w.payment;
  Decision d = w.stopping ? decide_stopping(w.call, result.outcome, *w.stopping,
                                            p.stop_requested_at.has_value(), now,
                                            order_absent_final_at(progress_of(p), w.contract, now))
                          : decide(progress_of(p), w.call, result.outcome, w.contract, now, jitter);
  auto t = transition(p.state, d.trigger);
  if (!t) {
    log::error("engine.illegal_transition", "the decision is not a legal transition from the claimed state",
               {{"payment_id", p.id},
                {"client_key", p.client_key},
                {"fence", w.fence},
                {"trigger", to_string(d.trigger)},
                {"state", to_string(p.state)}});
    tx.release_lease(p.id, w.fence, now);
    return store::CasResult::illegal;
  }
  store::TransitionUpdate u;
  u.next_attempt_at = d.next_attempt_at;
  u.vendor_reference = result.vendor_reference;
  if (t->to == PaymentState::failed_final) {
    u.failure_code = result.decline_code.value_or("declined");
    u.failure_message = result.detail;
    if (w.stopping && w.call == CallKind::close)
      u.failure_message = "failed by an operator; the vendor has no order to close: " + result.detail;
    else if (w.stopping)
      u.failure_message = (p.stop_requested_at ? std::string("failed by an operator")
                                               : "stopped after " + std::string(to_string(*w.stopping))) +
                          "; closed at the vendor and confirmed closed and unpaid: " + result.detail;
  }
  if (w.call == CallKind::submit) u.last_submit_ended_at = now;
  if (d.trigger == Trigger::vendor_closed) u.vendor_closed_at = now;
  auto r = tx.apply_transition(p.id, w.fence, *t, u, now, rng);
  log_cas(p, w.fence, to_string(d.trigger), r);
  if (r == store::CasResult::illegal || r == store::CasResult::stale_fence) {
    // Someone else decided while the call was out: a verified callback or an operator (they
    // advance the fence), or a worker that took over a lapsed lease. A final answer is still
    // the vendor's word and is judged against the state the payment is in now: agreeing with a
    // terminal state is a no-op, contradicting it opens late_contradiction — never a second
    // transition, never a second event.
    r = reconcile_with_current(tx, p, w.fence, d.trigger, result, now, r, rng, metrics);
    return r;
  }
  if (r == store::CasResult::applied && d.give_up) {
    const Transition g = expect(transition(t->to, Trigger::give_up, *d.give_up),
                                 "give_up to be legal from the state just applied");
    store::TransitionUpdate gu;
    gu.next_attempt_at = now;
    const store::CasResult given_up = tx.apply_transition(p.id, w.fence, g, gu, now, rng);
    log_cas(p, w.fence, "give up", given_up);
    // A stopping call was the fence already (or followed it): nothing more to send.
    if (fences && !w.stopping && given_up == store::CasResult::applied && fence_wanted(p, *d.give_up))
      fences->push_back(FenceCall{p, *d.give_up});
  }
  if (r == store::CasResult::applied && w.stopping && d.give_up) {
    // The case shows what the close said ("vendor_fence", so no fence is owed after a restart)
    // and, after an accepted close, what the confirming query found.
    if (w.call == CallKind::close) {
      tx.append_open_case_evidence(p.id, fence_evidence(p, *d.give_up, result, now), now);
      return r;
    }
    providers::VendorResult closed;
    closed.outcome = VendorOutcome::succeeded;
    closed.detail = "the vendor accepted the close at " + format_rfc3339(p.vendor_closed_at.value_or(now));
    tx.append_open_case_evidence(p.id, fence_evidence(p, *d.give_up, closed, now), now);
  }
  if (r == store::CasResult::applied && (t->open_case || d.give_up))
    tx.append_open_case_evidence(p.id, vendor_evidence(p, w.fence, result, now), now);
  return r;
}

}  // namespace payorch::engine
