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
#include "store/store.h"

namespace payorch::dst {

bool Simulation::is_state_event(const std::string& type) {
  return type != "payment.escalated";
}

void Simulation::check_transaction(const Snapshot& before, const std::string& what, bool operator_resolution) {
  Snapshot after = db_->snapshot();
  std::map<std::string, int> state_events;
  std::map<std::string, int> created_events;
  std::map<std::string, int> escalated_events;
  for (const auto& e : db_->outbox_after(before.outbox_seq)) {
    if (is_state_event(e.type)) ++state_events[e.payment_id];
    if (e.type == "payment.created") ++created_events[e.payment_id];
    if (e.type == "payment.escalated") ++escalated_events[e.payment_id];
  }
  for (const auto& [id, row] : after.rows) {
    auto old = before.rows.find(id);
    const bool created = old == before.rows.end();
    const bool changed = created || old->second.state != row.state;
    // Invariant 6: each state change emits exactly one outbox event, in its transaction.
    if (state_events[id] != (changed ? 1 : 0))
      violation("invariant 6: " + what + ": payment " + id + " changed state " + std::to_string(changed) +
                " time(s) but wrote " + std::to_string(state_events[id]) + " state event(s)");
    // docs/contract.md §6: every case opened is announced by exactly one payment.escalated.
    const std::int64_t opened = row.cases - (created ? 0 : old->second.cases);
    if (escalated_events[id] != opened)
      violation("invariant 6: " + what + ": payment " + id + " got " + std::to_string(opened) +
                " new case(s) but " + std::to_string(escalated_events[id]) + " payment.escalated event(s)");
    if (created && created_events[id] != 1) violation("invariant 6: " + what + ": new payment " + id + " without one payment.created");
    // Invariant 4: a terminal state changes only through a reconciliation resolution.
    if (!created && is_terminal(old->second.state) && old->second.state != row.state && !operator_resolution)
      violation("invariant 4: " + what + ": terminal payment " + id + " moved " +
                std::string(to_string(old->second.state)) + " -> " + std::string(to_string(row.state)));
  }
  for (const auto& [id, row] : before.rows)
    if (!after.rows.contains(id)) violation("payment " + id + " disappeared in " + what);
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
  for (const FinalRow& row : db_->final_rows()) {
    const std::string& id = row.id;
    const std::string& key = row.client_key;
    const PaymentState state = row.state;
    const bool open_case = row.open_case;
    keys.insert(key);
    ++result_.stats.payments;
    if (row.was_unknown && is_terminal(state)) ++result_.stats.recovered_unknown;
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
  // Invariant 6 over the whole history: one payment.created first, terminal state events never
  // followed by another state event except an operator's payment.corrected.
  std::map<std::string, std::vector<std::string>> history;
  for (auto& e : db_->outbox_after(0)) history[e.payment_id].push_back(std::move(e.type));
  for (const auto& [id, types] : history) {
    if (types.empty() || types.front() != "payment.created" || std::count(types.begin(), types.end(), "payment.created") != 1)
      violation("invariant 6: payment " + id + " does not start with exactly one payment.created");
    bool terminal = false;
    for (const auto& t : types) {
      if (terminal && is_state_event(t) && t != "payment.corrected")
        violation("invariant 4: payment " + id + " has " + t + " after a terminal event");
      if (t == "payment.succeeded" || t == "payment.failed") terminal = true;
    }
  }
  if (const std::string integrity = db_->integrity_check(); integrity != "ok")
    violation("integrity_check failed: " + integrity);
}

}  // namespace payorch::dst
