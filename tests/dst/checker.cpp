// The checker: the invariants of docs/contract.md §3, over the committed rows after every transaction, at
// every request the vendor receives, and over the whole history once the run has settled.
#include "dst/simulator.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "core/state_machine.h"
#include "engine/steps.h"
#include "store/cases.h"
#include "store/store.h"

namespace payorch::dst {

bool Simulation::is_state_event(const std::string& type) {
  return type != "payment.escalated" && type != "refund.escalated";
}

namespace {

// A payment's or a refund's event of that kind ("created" -> payment.created, refund.created).
bool is_event(const std::string& type, std::string_view kind) {
  return type == "payment." + std::string(kind) || type == "refund." + std::string(kind);
}

}  // namespace

void Simulation::check_transaction(const Snapshot& before, const std::string& what, bool operator_resolution) {
  Snapshot after = db_->snapshot();
  std::map<std::string, int> state_events;
  std::map<std::string, int> created_events;
  std::map<std::string, int> escalated_events;
  for (const auto& e : db_->outbox_after(before.outbox_seq)) {
    if (operator_resolution && is_event(e.type, "corrected")) ++corrections_resolved_[e.payment_id];
    if (is_state_event(e.type)) ++state_events[e.payment_id];
    if (is_event(e.type, "created")) ++created_events[e.payment_id];
    if (is_event(e.type, "escalated")) ++escalated_events[e.payment_id];
  }
  for (const auto& [id, row] : after.rows) {
    auto old = before.rows.find(id);
    const bool created = old == before.rows.end();
    // A DEFERRED refund released to PROCESSING keeps its stored state: its refund.processing
    // event is the change.
    const bool changed = created || old->second.state != row.state || old->second.deferred != row.deferred;
    // Invariant 6: each state change emits exactly one outbox event, in its transaction.
    if (state_events[id] != (changed ? 1 : 0))
      violation("invariant 6: " + what + ": payment " + id + " changed state " + std::to_string(changed) +
                " time(s) but wrote " + std::to_string(state_events[id]) + " state event(s)");
    // docs/contract.md §6: every case opened is announced by exactly one payment.escalated.
    const std::int64_t opened = row.cases - (created ? 0 : old->second.cases);
    if (escalated_events[id] != opened)
      violation("invariant 6: " + what + ": payment " + id + " got " + std::to_string(opened) +
                " new case(s) but " + std::to_string(escalated_events[id]) + " payment.escalated event(s)");
    if (created && created_events[id] != 1) violation("invariant 6: " + what + ": new payment " + id + " without one payment.created or refund.created");
    // Invariant 4: a terminal state changes only through a reconciliation resolution.
    if (!created && is_terminal(old->second.state) && old->second.state != row.state && !operator_resolution)
      violation("invariant 4: " + what + ": terminal payment " + id + " moved " +
                std::string(to_string(old->second.state)) + " -> " + std::string(to_string(row.state)));
    // Invariant 5: a payment is leased anew only once the lease it had has lapsed, also when it
    // is due again before that (an operator's retry or a stop keeps the lease of the call on the
    // wire): two workers never hold it at once.
    if (!created && !row.lease_owner.empty() && !old->second.lease_owner.empty() &&
        (row.lease_owner != old->second.lease_owner || row.lease_expires_at != old->second.lease_expires_at) &&
        old->second.lease_expires_at > clock_.now_ms())
      violation("invariant 5: " + what + ": payment " + id + " leased to " + row.lease_owner + " while the lease of " +
                old->second.lease_owner + " lived for another " +
                std::to_string(old->second.lease_expires_at - clock_.now_ms()) + " ms");
  }
  for (const auto& [id, row] : before.rows)
    if (!after.rows.contains(id)) violation("payment " + id + " disappeared in " + what);
  // The close invariant (a confirmed close, core/decide.h): automatic work never records
  // FAILED_FINAL for a payment whose order the vendor has paid.
  if (profile_.closable()) {
    for (const auto& [id, row] : after.rows) {
      auto old = before.rows.find(id);
      if (row.state != PaymentState::failed_final || !row.refund_of.empty() ||
          (old != before.rows.end() && old->second.state == PaymentState::failed_final))
        continue;
      const std::optional<Payment> p = db_->tx().find_payment_by_id(id);
      if (!p) continue;
      if (p->vendor_closed_at) ++result_.stats.closed_final;
      if (operator_resolution) continue;
      for (const auto& c : ledger_)
        if (c.key == p->client_key && c.status == Charge::Status::succeeded)
          violation("close invariant: " + what + ": payment " + id + " recorded FAILED_FINAL while the vendor holds its order " +
                    c.reference + " paid");
    }
  }
  // Invariant 8: exposure is visible (the store's figure equals the rows) and capped.
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> mine;  // currency -> count, amount
  std::int64_t count = 0;
  for (const auto& [id, row] : after.rows)
    if (row.state == PaymentState::unknown || (row.state == PaymentState::processing && row.submit_in_flight)) {
      mine[row.currency].first += 1;
      mine[row.currency].second += row.amount;
      ++count;
    }
  // The kept figures (schema 005 triggers) equal both this count and the store's own recount.
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> theirs;
  store::Tx& tx = db_->tx();
  for (const auto& e : tx.exposure()) theirs[e.currency] = {e.count, e.amount_minor};
  if (mine != theirs) violation("invariant 8: " + what + ": exposure kept differs from the payments");
  for (const auto& d : tx.exposure_differences())
    violation("invariant 8: " + what + ": exposure kept differs from the recount: " + d);
  // A submit starts only while the provider is under its cap, and nothing else adds to the
  // count: it never exceeds the cap.
  if (count > profile_.max_unknown_count)
    violation("invariant 8: " + what + ": exposure " + std::to_string(count) + " over the cap " +
              std::to_string(profile_.max_unknown_count));
  check_refunds(after, what);
}

bool Simulation::open_case_of(const std::string& row_id, std::string* reason) {
  for (const auto& rc : db_->tx().list_cases(store::CaseStatus::open, 1000, std::nullopt).cases) {
    const auto& id = store::case_row_id(rc);
    if (id && *id == row_id) {
      if (reason) *reason = rc.reason;
      return true;
    }
  }
  return false;
}

void Simulation::check_not_found_rule(const Request& r, const Payment& was, const Payment& now) {
  // What the answer did, as the rows show it: UNKNOWN -> PROCESSING with a submit next (the key
  // sent again), or a conclusion of FAILED_FINAL. An operator's stop (failed_final asked for)
  // concludes on not_found by its own rule.
  const bool resubmit = was.state == PaymentState::unknown && now.state == PaymentState::processing &&
                        now.next_action == NextAction::submit;
  const bool concluded = !is_terminal(was.state) && now.state == PaymentState::failed_final && !was.stop_requested_at;
  if (!resubmit && !concluded) return;
  ++result_.stats.trusted_not_found;
  const auto& trust_after = profile_.contract.not_found_final_after;
  std::string why;
  if (r.call.call != CallKind::query) why = "the answer of a " + std::string(to_string(r.call.call));
  else if (was.state != PaymentState::unknown) why = "a query of a " + std::string(to_string(was.state)) + " payment";
  else if (!trust_after) why = "a contract without not_found_final_after";
  else if (!was.last_submit_ended_at) why = "no submit has ended";
  else if (clock_.now_ms() - *was.last_submit_ended_at < trust_after->count())
    why = std::to_string(clock_.now_ms() - *was.last_submit_ended_at) + " ms after the last submit ended, before not_found_final_after " +
          std::to_string(trust_after->count()) + " ms";
  if (!why.empty())
    violation("not-found rule: payment " + was.id + " (" + was.client_key + ") acted on not_found (" +
              std::string(resubmit ? "resubmit" : "FAILED_FINAL") + "): " + why);
}

void Simulation::check_late_contradiction(const std::string& what, const Payment& was, PaymentState answer,
                                          bool case_open_before) {
  const auto now = db_->tx().find_payment_by_id(was.id);
  if (!now) return;
  std::string reason;
  const bool open = open_case_of(was.id, &reason);
  if (now->state != was.state)
    violation("late contradiction: " + what + ": the vendor's " + std::string(to_string(answer)) + " moved terminal payment " +
              was.id + " " + std::string(to_string(was.state)) + " -> " + std::string(to_string(now->state)));
  else if (!open || (!case_open_before && reason != "late_contradiction"))
    violation("late contradiction: " + what + ": the vendor's " + std::string(to_string(answer)) + " about " +
              std::string(to_string(was.state)) + " payment " + was.id + " opened no late_contradiction case" +
              (open ? " (" + reason + ")" : ""));
  else
    ++result_.stats.late_contradictions;
}

void Simulation::check_refunds(const Snapshot& s, const std::string& what) {
  std::map<std::string, std::int64_t> reserved, refunded;  // payment id -> its refunds' sums
  for (const auto& [id, row] : s.rows) {
    if (row.refund_of.empty()) continue;
    auto payment = s.rows.find(row.refund_of);
    if (payment == s.rows.end()) {
      violation("refunds: " + what + ": refund " + id + " of a payment that is not there");
      continue;
    }
    if (row.state != PaymentState::failed_final) reserved[row.refund_of] += row.amount;
    if (row.state == PaymentState::succeeded) refunded[row.refund_of] += row.amount;
    // Refund invariant 3: a payment's terminal transition releases its DEFERRED refunds in its
    // own transaction, so none is ever seen behind a terminal payment.
    if (row.deferred && is_terminal(payment->second.state))
      violation("refund invariant 3: " + what + ": refund " + id + " is DEFERRED but its payment " + row.refund_of +
                " is " + std::string(to_string(payment->second.state)));
  }
  for (const auto& [id, row] : s.rows) {
    if (!row.refund_of.empty()) continue;
    // Refund invariant 1, locally: Σ refunded ≤ amount (and the money rule, Σ refunds not
    // FAILED_FINAL ≤ amount), and the kept figures equal the refund rows.
    if (reserved[id] > row.amount || refunded[id] > row.amount)
      violation("refund invariant 1: " + what + ": payment " + id + " of " + std::to_string(row.amount) +
                " has refunds of " + std::to_string(reserved[id]) + " not FAILED_FINAL, " +
                std::to_string(refunded[id]) + " SUCCEEDED");
    if (row.amount_refunded != refunded[id] || row.amount_reserved != reserved[id])
      violation("refund invariant 1: " + what + ": payment " + id + " keeps amount_refunded_minor " +
                std::to_string(row.amount_refunded) + " / amount_reserved_minor " + std::to_string(row.amount_reserved) +
                ", its refund rows sum to " + std::to_string(refunded[id]) + " / " + std::to_string(reserved[id]));
  }
}

void Simulation::check_committed_before_call(const Request& r) {
  // The call's payment is the one row that holds its key (a payment's client_key is unique and
  // never changes).
  const auto p = db_->tx().find_payment_by_id(r.call.payment.id);
  if (!p || p->client_key != r.call.payment.client_key) {
    violation("invariant 1: the vendor received " + r.call.payment.client_key + " which no committed row holds");
    return;
  }
  const providers::ChargeRequest committed{p->client_key, p->amount_minor, p->currency, p->payee, p->source};
  if (!same_params(committed, engine::charge_of(r.call.payment)))
    violation("invariant 1: the vendor received other parameters than the committed row's for " + r.call.payment.client_key);
  if (p->attempt_count < r.call.payment.attempt_count)
    violation("invariant 1: call " + std::to_string(r.call.payment.attempt_count) + " of " + r.call.payment.client_key +
              " left before its claim committed (committed attempt_count " + std::to_string(p->attempt_count) + ")");
}

void Simulation::final_checks() {
  // Invariant 3: every acknowledged intake is there, unchanged, and terminal or in front of a
  // human.
  for (const auto& op : intakes_) {
    if (!op.acked) {
      violation("intake " + op.intent.operation_id + " was never acknowledged");
      continue;
    }
    auto p = db_->tx().find_payment_by_operation(op.tenant, "payment", op.intent.operation_id);
    if (!p || (!op.payment_id.empty() && p->id != op.payment_id)) {
      violation("invariant 3: acknowledged intake " + op.intent.operation_id + " is lost");
      continue;
    }
    if (p->amount_minor != op.intent.amount_minor || p->currency != op.intent.currency || p->request_digest != op.digest)
      violation("invariant 3: acknowledged intake " + op.intent.operation_id + " changed");
  }
  std::map<std::string, int> charges_per_key;
  for (const auto& c : ledger_) ++charges_per_key[c.key];
  std::set<std::string> keys;
  const std::vector<FinalRow> rows = db_->final_rows();
  for (const FinalRow& row : rows) {
    const std::string& id = row.id;
    const std::string& key = row.client_key;
    const PaymentState state = row.state;
    const bool open_case = row.open_case;
    keys.insert(key);
    if (row.was_unknown && is_terminal(state)) ++result_.stats.recovered_unknown;
    if (!row.refund_of.empty()) continue;  // final_refund_checks
    ++result_.stats.payments;
    // Invariant 2: at most one charge per payment at the vendor.
    if (charges_per_key[key] > 1)
      violation("invariant 2: payment " + id + " (" + key + ") was charged " + std::to_string(charges_per_key[key]) + " times");
    // Invariant 3: terminal or in front of a human.
    if (!is_terminal(state) && !open_case)
      violation("invariant 3: payment " + id + " ended " + std::string(to_string(state)) + " with no open case");
    // The vendor's word and ours agree, or a human has the disagreement.
    auto truth = ledger_truth(key);
    const bool vendor_succeeded = truth && truth->status == Charge::Status::succeeded;
    if (state == PaymentState::succeeded && !vendor_succeeded && !open_case)
      violation("payment " + id + " is SUCCEEDED but the vendor has no successful charge, and no case is open");
    if (state == PaymentState::failed_final && vendor_succeeded && !open_case)
      violation("payment " + id + " is FAILED_FINAL but the vendor charged it, and no case is open");
    fingerprint_ ^= std::hash<std::string>{}(id + key + std::string(to_string(state)));
  }
  result_.stats.escalated = db_->payments_escalated();
  for (const auto& [key, n] : charges_per_key)
    if (!keys.contains(key)) violation("unexpected charge: the vendor charged " + key + " which no payment holds");
  final_refund_checks(rows);
  // Invariant 6 over the whole history: one payment.created first, terminal state events never
  // followed by another state event except a payment.corrected an operator's resolution wrote
  // (counted as each resolution committed).
  std::map<std::string, std::vector<std::string>> history;
  for (auto& e : db_->outbox_after(0)) history[e.payment_id].push_back(std::move(e.type));
  for (const auto& [id, types] : history) {
    const std::string created = id.starts_with("re_") ? "refund.created" : "payment.created";
    if (types.empty() || types.front() != created || std::count(types.begin(), types.end(), created) != 1)
      violation("invariant 6: " + id + " does not start with exactly one " + created);
    bool terminal = false;
    int corrections = 0;
    for (const auto& t : types) {
      if (is_event(t, "corrected") && ++corrections > corrections_resolved_[id])
        violation("invariant 4: " + id + " has " + t + " that no operator's resolution wrote");
      if (terminal && is_state_event(t) && !is_event(t, "corrected"))
        violation("invariant 4: " + id + " has " + t + " after a terminal event");
      if (is_event(t, "succeeded") || is_event(t, "failed")) terminal = true;
    }
  }
  if (const std::string integrity = db_->integrity_check(); integrity != "ok")
    violation("integrity_check failed: " + integrity);
}

void Simulation::final_refund_checks(const std::vector<FinalRow>& rows) {
  std::map<std::string, const FinalRow*> by_id;
  for (const FinalRow& row : rows) by_id[row.id] = &row;
  // Every acknowledged refund intake is there, unchanged, of its payment (invariant 3).
  for (const auto& op : refund_ops_) {
    const IntakeOp& payment = intakes_[op.payment];
    if (!op.acked) {
      violation("refund intake " + op.intent.operation_id + " was never acknowledged");
      continue;
    }
    if (op.refund_id.empty()) continue;  // refused
    auto r = db_->tx().find_refund(payment.tenant, op.intent.operation_id);
    if (!r || r->id != op.refund_id || !r->refund_of || r->refund_of->id != payment.payment_id) {
      violation("invariant 3: acknowledged refund " + op.intent.operation_id + " is lost");
      continue;
    }
    if (r->amount_minor != op.intent.amount_minor) violation("invariant 3: acknowledged refund " + op.intent.operation_id + " changed");
  }
  std::map<std::string, int> refunds_per_key;
  for (const auto& vr : vendor_refunds_) ++refunds_per_key[vr.key];
  std::set<std::string> keys;
  for (const FinalRow& row : rows) {
    if (row.refund_of.empty()) continue;
    keys.insert(row.client_key);
    auto payment = by_id.find(row.refund_of);
    if (payment == by_id.end()) continue;  // check_refunds
    // Invariant 2: at most one refund per refund key at the vendor.
    if (refunds_per_key[row.client_key] > 1)
      violation("invariant 2: refund " + row.id + " (" + row.client_key + ") was made " +
                std::to_string(refunds_per_key[row.client_key]) + " times at the vendor");
    // Invariant 3: terminal or in front of a human; a DEFERRED refund waits on its payment's case.
    const bool waits_on_case = row.deferred && !is_terminal(payment->second->state) && payment->second->open_case;
    if (!is_terminal(row.state) && !row.open_case && !waits_on_case)
      violation("invariant 3: refund " + row.id + (row.deferred ? " ended DEFERRED" : " ended " + std::string(to_string(row.state))) +
                " with no open case (its payment " + std::string(to_string(payment->second->state)) + ")");
    const VendorRefund* truth = refund_truth(row.client_key);
    const bool vendor_succeeded = truth && truth->succeeded;
    if (row.state == PaymentState::succeeded && !vendor_succeeded && !row.open_case)
      violation("refund " + row.id + " is SUCCEEDED but the vendor has no successful refund, and no case is open");
    if (row.state == PaymentState::failed_final && vendor_succeeded && !row.open_case)
      violation("refund " + row.id + " is FAILED_FINAL but the vendor refunded it, and no case is open");
    fingerprint_ ^= std::hash<std::string>{}(row.id + row.client_key + std::string(to_string(row.state)) + (row.deferred ? "d" : ""));
  }
  for (const auto& [key, n] : refunds_per_key)
    if (!keys.contains(key)) violation("unexpected refund: the vendor refunded " + key + " which no refund holds");
  // Refund invariant 1 at the vendor: Σ succeeded refunds of a charge ≤ the charge.
  std::map<std::size_t, std::int64_t> refunded;
  for (const auto& vr : vendor_refunds_)
    if (vr.succeeded) refunded[vr.charge] += vr.request.amount_minor;
  for (const auto& [charge, sum] : refunded)
    if (sum > ledger_[charge].request.amount_minor)
      violation("refund invariant 1: the vendor refunded " + std::to_string(sum) + " of charge " + ledger_[charge].reference +
                " of " + std::to_string(ledger_[charge].request.amount_minor));
  // Refund invariant 2: the vendor heard of no refund before its payment was SUCCEEDED in what
  // payorch had committed.
  for (const auto& call : refund_calls_)
    if (!call.payment_succeeded)
      violation("refund invariant 2: the vendor received refund " + call.refund_key + " while its payment " +
                call.payment_id + " was not SUCCEEDED");
  // No refund is declined for its charge's state: payorch only sends it once its payment has
  // succeeded, and the vendor said so first.
  for (const auto& vr : vendor_refunds_)
    if (vr.decline_code == "charge_not_refundable")
      violation("refund invariant 2: the vendor declined refund " + vr.key + " as charge_not_refundable");
  // Refund invariant 3 (and 1, locally) over the settled rows.
  check_refunds(db_->snapshot(), "the settled run");
}

}  // namespace payorch::dst
