// The workload: clients that make payments (intakes at random times, replays of the same
// body, reuses of a key with another body) and refunds of them, and the operator who works the
// cases from the vendor's ledger.
#include "dst/simulator.h"

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/digest.h"
#include "store/cases.h"
#include "store/intake.h"
#include "store/resolution.h"
#include "store/store.h"

namespace payorch::dst {

void Simulation::plan_load() {
  static const std::vector<std::string> currencies{"EUR", "USD", "JPY"};
  static const std::vector<std::string> tenants{"acme", "globex"};
  // Refund requests are part of the profile's operations, not on top of them: the run's size
  // (and the suite's time) stays that of `payments` operations.
  for (int i = 0; intakes_.size() + refund_ops_.size() < static_cast<std::size_t>(profile_.payments); ++i) {
    IntakeOp op;
    op.tenant = rng_.pick(tenants);
    op.intent.operation_id = "order-" + std::to_string(i);
    op.intent.amount_minor = rng_.between(1, 500'000);
    op.intent.currency = rng_.pick(currencies);
    op.intent.payee = "payee-" + std::to_string(rng_.between(1, 9));
    op.intent.source = "tok_" + std::to_string(rng_.between(1000, 9999));
    op.digest = request_digest(op.intent);
    intakes_.push_back(op);
    const UnixMillis at = clock_.now_ms() + rng_.between(0, profile_.load_window);
    intake_outstanding_.insert(intakes_.size() - 1);
    schedule(at, Kind::intake, intakes_.size() - 1);
    if (rng_.chance(profile_.p_replay)) schedule(at + rng_.between(1, 3 * minute), Kind::replay, intakes_.size() - 1);
    if (rng_.chance(profile_.p_conflict)) schedule(at + rng_.between(1, 3 * minute), Kind::conflict, intakes_.size() - 1);
    if (rng_.chance(profile_.p_refund)) plan_refunds(intakes_.size() - 1, at);
  }
  if (profile_.operator_on) schedule(clock_.now_ms() + 5 * minute, Kind::operator_pass, 0);
}

store::IntakeRequest Simulation::intake_request(const IntakeOp& op) const {
  return store::IntakeRequest{op.tenant, op.intent, provider_name, op.digest, {}};
}

void Simulation::on_intake(std::size_t i) {
  IntakeOp& op = intakes_[i];
  if (op.acked) return;
  std::optional<store::IntakeOutcome> out;
  if (opts_.defect == Defect::ack_before_commit && !op.acked) {
    // The defect: the client is told "created" before the transaction commits.
    op.acked = true;
    ++result_.stats.acknowledged;
  }
  const TxnEnd end = transact("intake " + op.intent.operation_id, [&](store::Tx& tx) {
    out = tx.record_intake(intake_request(op), clock_.now_ms(), ids_);
  });
  if (end != TxnEnd::committed) return;  // no answer: the client retries (see crash())
  intake_outstanding_.erase(i);
  if (out->kind == store::IntakeOutcome::Kind::conflict) {
    violation("intake " + op.intent.operation_id + " of the same body answered as a conflict");
    return;
  }
  if (!op.acked || op.payment_id.empty()) {
    if (!op.acked) ++result_.stats.acknowledged;
    op.acked = true;
    op.payment_id = out->payment.id;
  }
  for (auto& e : engines_) e.next_poll = std::min(e.next_poll, clock_.now_ms());
}

void Simulation::on_replay(std::size_t i, bool conflict) {
  IntakeOp op = intakes_[i];
  if (!intakes_[i].acked || intakes_[i].payment_id.empty()) {
    schedule(clock_.now_ms() + minute, conflict ? Kind::conflict : Kind::replay, i);
    return;
  }
  if (conflict) {
    op.intent.amount_minor += 1;
    op.digest = request_digest(op.intent);
  }
  std::optional<store::IntakeOutcome> out;
  const TxnEnd end = transact(std::string(conflict ? "conflicting reuse " : "replay ") + op.intent.operation_id,
                              [&](store::Tx& tx) { out = tx.record_intake(intake_request(op), clock_.now_ms(), ids_); });
  if (end != TxnEnd::committed) return;
  const auto want = conflict ? store::IntakeOutcome::Kind::conflict : store::IntakeOutcome::Kind::replayed;
  if (out->kind != want || out->payment.id != intakes_[i].payment_id)
    violation("intake " + op.intent.operation_id + ": a " + (conflict ? "conflicting reuse" : "replay") +
              " was not answered with the stored payment");
  ++(conflict ? result_.stats.intake_conflicts : result_.stats.intake_replays);
}

void Simulation::plan_refunds(std::size_t payment, UnixMillis intake_at) {
  const std::int64_t amount = intakes_[payment].intent.amount_minor;
  const int n = static_cast<int>(rng_.between(1, 3));
  for (int j = 0; j < n; ++j) {
    RefundOp op;
    op.payment = payment;
    op.intent.operation_id = intakes_[payment].intent.operation_id + "-refund-" + std::to_string(j);
    // Up to two thirds of the payment each, or all of it: two of them often exceed it.
    op.intent.amount_minor = rng_.chance(0.2) ? amount : rng_.between(1, std::max<std::int64_t>(1, amount * 2 / 3));
    refund_ops_.push_back(op);
    const std::size_t i = refund_ops_.size() - 1;
    refund_outstanding_.insert(i);
    // The first often right behind the payment's intake, while it is still PROCESSING: DEFERRED.
    const UnixMillis at = intake_at + (j == 0 && rng_.chance(0.5) ? rng_.between(1, 2 * second)
                                                                   : rng_.between(1, 10 * minute));
    schedule(at, Kind::refund_intake, i);
    if (rng_.chance(profile_.p_replay)) schedule(at + rng_.between(1, 3 * minute), Kind::refund_intake, i);
  }
}

void Simulation::on_refund_intake(std::size_t i) {
  RefundOp& op = refund_ops_[i];
  const IntakeOp& payment = intakes_[op.payment];
  if (!payment.acked) {
    // The client has no payment to refund yet (it would be told 404): it asks again later.
    schedule(clock_.now_ms() + rng_.between(1 * second, 1 * minute), Kind::refund_intake, i);
    return;
  }
  using K = store::RefundIntakeOutcome::Kind;
  std::optional<store::RefundIntakeOutcome> out;
  const TxnEnd end = transact("refund intake " + op.intent.operation_id, [&](store::Tx& tx) {
    out = tx.record_refund_intake(store::RefundIntakeRequest{payment.tenant, payment.intent.operation_id, op.intent, {}},
                                  clock_.now_ms(), ids_);
  });
  if (end != TxnEnd::committed) return;  // no answer: the client retries (see crash())
  if (out->kind == K::no_payment) {
    // Only the planted ack_before_commit defect acknowledges a payment that is not there.
    schedule(clock_.now_ms() + rng_.between(1 * second, 1 * minute), Kind::refund_intake, i);
    return;
  }
  refund_outstanding_.erase(i);
  const bool stored = out->kind == K::created || out->kind == K::replayed;
  if (out->kind == K::conflict) {
    violation("refund intake " + op.intent.operation_id + " of the same body answered as a conflict");
    return;
  }
  if (op.acked && !op.refund_id.empty() && (!stored || out->refund.id != op.refund_id)) {
    violation("refund intake " + op.intent.operation_id + ": a replay was not answered with the stored refund");
    return;
  }
  if (op.acked) return;
  op.acked = true;
  op.answer = out->kind;
  if (stored) {
    op.refund_id = out->refund.id;
    ++result_.stats.refunds;
    if (out->refund.deferred) ++result_.stats.refunds_deferred;
  } else {
    ++result_.stats.refunds_refused;
  }
  for (auto& e : engines_) e.next_poll = std::min(e.next_poll, clock_.now_ms());
}

void Simulation::on_operator_pass() {
  auto page = db_->tx().list_cases(store::CaseStatus::open, 100, std::nullopt);
  for (const auto& rc : page.cases) {
    // The row the case is about: for a refund's case the refund, not the payment it names.
    const auto& row_id = store::case_row_id(rc);
    if (!row_id) continue;
    auto p = db_->tx().find_payment_by_id(*row_id);
    if (!p || committing_.contains(p->client_key)) continue;
    // The vendor's word: its charge, or for a refund row its refund, under the row's key.
    std::optional<bool> truth_succeeded;
    std::string truth_reference;
    if (p->refund_of) {
      if (const VendorRefund* vr = refund_truth(p->client_key)) {
        truth_succeeded = vr->succeeded;
        truth_reference = vr->reference;
      }
    } else if (auto truth = ledger_truth(p->client_key)) {
      if (truth->status == Charge::Status::pending) continue;
      truth_succeeded = truth->status == Charge::Status::succeeded;
      truth_reference = truth->reference;
    }
    store::Resolution res;
    res.by = "operator";
    res.note = "checked the vendor's dashboard";
    if (truth_succeeded) {
      res.outcome = *truth_succeeded ? store::ResolutionOutcome::succeeded : store::ResolutionOutcome::failed_final;
      res.vendor_reference = truth_reference;
    } else if (!is_terminal(p->state) && retried_.insert(p->id).second) {
      res.outcome = store::ResolutionOutcome::retry;  // once: let the engine try again
    } else if (!is_terminal(p->state)) {
      res.outcome = store::ResolutionOutcome::failed_final;  // the vendor has no charge
    } else {
      continue;
    }
    bool resolved = false;
    const TxnEnd end = transact("operator resolves " + rc.id, [&](store::Tx& tx) {
      auto r = tx.resolve_case(rc.id, res, profile_.contract, clock_.now_ms(), ids_);
      if (!std::holds_alternative<store::Resolved>(r) && res.outcome == store::ResolutionOutcome::retry) {
        // Too late to send the key again: the vendor confirms it has no charge.
        res.outcome = store::ResolutionOutcome::failed_final;
        r = tx.resolve_case(rc.id, res, profile_.contract, clock_.now_ms(), ids_);
      }
      resolved = std::holds_alternative<store::Resolved>(r);
    }, true);
    if (end == TxnEnd::crashed_before_commit) break;
    if (resolved) ++result_.stats.resolved;
    if (end != TxnEnd::committed) break;
  }
  for (auto& e : engines_) e.next_poll = std::min(e.next_poll, clock_.now_ms());
  if (!settling_ || !queue_.empty() || !settled()) schedule(clock_.now_ms() + 5 * minute, Kind::operator_pass, 0);
}

}  // namespace payorch::dst
