// The vendor model: a ledger of charges keyed by idempotency key, keys that expire after the
// contract's retention, pending charges decided later, faults before and after the commit,
// and the callbacks it sends. Refunds of its charges, by their own key, with the vendor sim's
// rules (src/vendor_sim/refund.h): a charge that is not succeeded is declined
// charge_not_refundable, an amount above what is left of it exceeds_charge.
#include "dst/simulator.h"

#include <optional>
#include <string>

#include "engine/steps.h"
#include "store/callbacks.h"

namespace payorch::dst {

void Simulation::expire_keys() {
  for (auto it = live_.begin(); it != live_.end();) {
    Charge& c = ledger_[it->second];
    if (c.first_seen + profile_.contract.key_retention.count() <= clock_.now_ms()) {
      c.forgotten = true;
      ++result_.stats.expired_keys;
      step("vendor forgets " + c.key);
      it = live_.erase(it);
    } else {
      ++it;
    }
  }
}

VendorResult Simulation::answer_for(const Charge& c) const {
  VendorResult v;
  v.http_status = 200;
  v.vendor_reference = c.reference;
  v.amount_minor = c.request.amount_minor;
  v.currency = c.request.currency;
  switch (c.status) {
    case Charge::Status::succeeded: v.outcome = VendorOutcome::succeeded; v.detail = "succeeded"; break;
    case Charge::Status::declined:
      v.outcome = VendorOutcome::declined;
      v.decline_code = c.closed ? "CLOSED" : "card_declined";
      v.detail = c.closed ? "closed" : "declined";
      break;
    case Charge::Status::pending: v.outcome = VendorOutcome::pending; v.detail = "pending"; break;
  }
  return v;
}

bool Simulation::same_params(const providers::ChargeRequest& a, const providers::ChargeRequest& b) {
  return a.amount_minor == b.amount_minor && a.currency == b.currency && a.payee == b.payee && a.source == b.source;
}

void Simulation::commit_charge(const providers::ChargeRequest& req, std::optional<std::size_t> answer_to) {
  Charge c;
  c.key = req.client_key;
  c.request = req;
  c.first_seen = clock_.now_ms();
  c.reference = "ch_" + std::to_string(ledger_.size() + 1);
  if (rng_.chance(profile_.p_pending)) c.status = Charge::Status::pending;
  else c.status = rng_.chance(profile_.p_decline) ? Charge::Status::declined : Charge::Status::succeeded;
  ledger_.push_back(c);
  ++result_.stats.charges;
  const std::size_t idx = ledger_.size() - 1;
  live_[c.key] = idx;
  step("vendor commits " + c.key + " as " + std::to_string(static_cast<int>(c.status)));
  if (c.status != Charge::Status::pending) maybe_reverse(idx);
  if (c.status == Charge::Status::pending) {
    // A vendor that closes orders waits longer for its user (a code shown, paid later), so the
    // payment often races against payorch's close.
    const UnixMillis decide_within = profile_.closable() ? 30 * minute : 5 * minute;
    schedule(clock_.now_ms() + rng_.between(2 * second, decide_within), Kind::vendor_decide, idx);
    if (rng_.chance(0.3)) send_callbacks(idx);  // a "pending" notification
  } else {
    send_callbacks(idx);
  }
  if (!answer_to) return;
  // The answer may be lost after the commit, or replaced by a 5xx.
  if (faults_on() && rng_.chance(profile_.p_commit_then_lost)) {
    ++result_.stats.vendor_faults;
    return;  // the worker times out
  }
  if (faults_on() && rng_.chance(profile_.p_commit_then_5xx)) {
    ++result_.stats.vendor_faults;
    answer_later(*answer_to, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 502, "bad gateway after commit"});
    return;
  }
  answer_later(*answer_to, answer_for(ledger_[idx]));
}

// A lookup the vendor cannot answer from its ledger: it has none (recovery `none`, or a
// replay-only dialect, which recovery must never query), or it fails. False when answered here.
bool Simulation::lookup_answered(std::size_t i, const std::string& key) {
  if (profile_.contract.recovery == RecoveryMode::none || !profile_.lookup_supported) {
    if (!profile_.lookup_supported)
      violation("a lookup of " + key + " reached a vendor without lookup: recovery under " +
                profile_.recovery + " must replay, never query");
    answer_later(i, VendorResult{VendorOutcome::unsupported, {}, {}, {}, {}, 0, "no lookup"});
    return false;
  }
  if (faults_on() && rng_.chance(profile_.p_query_fault)) {
    ++result_.stats.vendor_faults;
    if (rng_.chance(0.5)) answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 503, "unavailable"});
    return false;  // or no answer at all
  }
  return true;
}

// Whether the vendor's search shows a commit made at `committed_at` yet (Profile::search_lag).
bool Simulation::searchable(UnixMillis committed_at) {
  if (committed_at + profile_.search_lag.count() <= clock_.now_ms()) return true;
  ++result_.stats.hidden_by_search_lag;
  return false;
}

void Simulation::on_vendor_receive(std::size_t i) {
  const Request& r = requests_[i];
  ++result_.stats.vendor_requests;
  check_committed_before_call(r);
  if (r.call.payment.refund_of) return on_vendor_receive_refund(i);
  expire_keys();
  if (r.call.call == CallKind::close) return on_vendor_close(i);
  const providers::ChargeRequest req = engine::charge_of(r.call.payment);
  const bool submit = r.call.call == CallKind::submit;
  if (!submit) {
    if (!lookup_answered(i, req.client_key)) return;
    auto it = live_.find(req.client_key);
    if (it == live_.end() || !searchable(ledger_[it->second].first_seen))
      answer_later(i, VendorResult{VendorOutcome::not_found, {}, {}, {}, {}, 404, "no such charge"});
    else answer_later(i, answer_for(ledger_[it->second]));
    return;
  }
  if (committing_.contains(req.client_key)) {
    ++result_.stats.vendor_faults;
    if (!profile_.in_flight_invisible) {
      answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 409, "a request with this key is in progress"});
      return;
    }
    // The first request is past the key check but not committed: this one passes it too, and
    // both will charge. payorch must never send a key again while it may be on the wire.
    ++result_.stats.invisible_in_flight;
    step("vendor does not see " + req.client_key + " in flight");
  }
  auto it = live_.find(req.client_key);
  if (it != live_.end() && opts_.defect != Defect::vendor_ignores_key) {
    const Charge& c = ledger_[it->second];
    if (!same_params(c.request, req)) {
      answer_later(i, VendorResult{VendorOutcome::key_mismatch, {}, {}, {}, {}, 422, "key used with other parameters"});
      return;
    }
    if (faults_on() && rng_.chance(profile_.p_commit_then_lost)) {
      ++result_.stats.vendor_faults;
      return;
    }
    answer_later(i, answer_for(c));  // the stored result of the first request
    return;
  }
  if (faults_on() && rng_.chance(profile_.p_fail_before_commit)) {
    ++result_.stats.vendor_faults;
    answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 500, "failed before commit"});
    return;
  }
  if (faults_on() && rng_.chance(profile_.p_delayed_commit)) {
    // Answered (5xx) or silent now, committed later: within the contract's promise that a
    // request lands no later than not_found_final_after after it ended.
    ++result_.stats.vendor_faults;
    committing_.insert(req.client_key);
    schedule(clock_.now_ms() + rng_.between(1 * second, 20 * second), Kind::vendor_commit, i);
    if (rng_.chance(0.5)) answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 504, "gateway timeout"});
    return;
  }
  commit_charge(req, i);
}

void Simulation::on_vendor_close(std::size_t i) {
  const Request& r = requests_[i];
  const std::string& key = r.call.payment.client_key;
  ++result_.stats.closes;
  if (!profile_.closable()) {
    violation("a close of " + key + " reached a vendor whose contract has none");
    answer_later(i, VendorResult{VendorOutcome::unsupported, {}, {}, {}, {}, 0, "no close"});
    return;
  }
  // payorch's side of the rule: never before close_not_before after its last submit ended.
  const Payment& p = r.call.payment;
  const UnixMillis ended = p.last_submit_ended_at.value_or(p.first_submit_at.value_or(0));
  if (r.sent_at < ended + profile_.contract.close_not_before.count())
    violation("a close of " + key + " was sent " + std::to_string(r.sent_at - ended) +
              " ms after the submit ended, before close_not_before");
  if (faults_on() && rng_.chance(profile_.p_query_fault)) {
    ++result_.stats.vendor_faults;
    if (rng_.chance(0.5)) answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 503, "unavailable"});
    return;  // or no answer at all
  }
  auto it = live_.find(key);
  if (it == live_.end()) {
    answer_later(i, VendorResult{VendorOutcome::not_found, {}, {}, {}, {}, 404, "ORDER_NOT_EXIST"});
    return;
  }
  Charge& c = ledger_[it->second];
  // The vendor's side: an order younger than close_not_before cannot be closed yet.
  if (clock_.now_ms() < c.first_seen + profile_.contract.close_not_before.count()) {
    answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 400, "too early to close"});
    return;
  }
  if (c.status == Charge::Status::succeeded) {
    ++result_.stats.closes_refused_paid;
    answer_later(i, VendorResult{VendorOutcome::declined, {}, "ORDERPAID", {}, {}, 400, "the order is paid"});
    return;
  }
  if (c.status == Charge::Status::pending) {
    c.status = Charge::Status::declined;
    c.closed = true;
    step("vendor closes " + key);
  }
  if (faults_on() && rng_.chance(profile_.p_commit_then_lost)) {
    ++result_.stats.vendor_faults;
    return;  // closed, the answer lost
  }
  answer_later(i, VendorResult{VendorOutcome::succeeded, {}, {}, {}, {}, 204, "closed"});
}

void Simulation::on_vendor_commit(std::size_t i) {
  if (requests_[i].call.payment.refund_of) {
    const providers::RefundRequest req = engine::refund_request_of(requests_[i].call.payment);
    committing_.erase(req.client_key);
    if (refund_keys_.contains(req.client_key) && opts_.defect != Defect::vendor_ignores_key) return;
    commit_refund(req, std::nullopt);
    return;
  }
  const providers::ChargeRequest req = engine::charge_of(requests_[i].call.payment);
  committing_.erase(req.client_key);
  expire_keys();
  // A vendor that checked the key at receipt commits what passed the check, whatever landed
  // meanwhile; one that holds the key in progress (409) never let a second one through.
  if (live_.contains(req.client_key) && opts_.defect != Defect::vendor_ignores_key && !profile_.in_flight_invisible) return;
  commit_charge(req, std::nullopt);
}

void Simulation::on_vendor_decide(std::size_t idx) {
  Charge& c = ledger_[idx];
  if (c.status != Charge::Status::pending) return;
  c.status = rng_.chance(profile_.p_decline) ? Charge::Status::declined : Charge::Status::succeeded;
  step("vendor decides " + c.key);
  send_callbacks(idx);
  maybe_reverse(idx);
}

void Simulation::maybe_reverse(std::size_t idx) {
  if (faults_on() && rng_.chance(profile_.p_reversal))
    schedule(clock_.now_ms() + rng_.between(1 * minute, 30 * minute), Kind::vendor_reverse, idx);
}

bool Simulation::has_refunds(const Charge& c) {
  for (const auto& vr : vendor_refunds_)
    if (ledger_[vr.charge].key == c.key) return true;
  if (refund_ops_.empty()) return false;
  // The charge's payment, by the intake it came from (acknowledged or not yet).
  const auto id = payment_of_key_.find(c.key);
  const auto p = id == payment_of_key_.end() ? std::nullopt : db_->tx().find_payment_by_id(id->second);
  if (!p) return true;  // cannot tell: keep the charge as it is
  for (const auto& op : refund_ops_) {
    const IntakeOp& intake = intakes_[op.payment];
    if (intake.tenant == p->tenant_id && intake.intent.operation_id == p->operation_id) return true;
  }
  return false;
}

// The vendor changes its final word about a charge (a reversal, a late capture) and says so in
// a callback it sends until acknowledged. Not for a charge a refund was or may be asked of, and
// not to paid after a close (the close invariant judges payorch by the vendor's word at the
// time).
void Simulation::on_vendor_reverse(std::size_t idx) {
  Charge& c = ledger_[idx];
  if (c.status == Charge::Status::pending || c.closed || has_refunds(c)) return;
  if (c.status == Charge::Status::declined && profile_.closable()) return;
  c.status = c.status == Charge::Status::succeeded ? Charge::Status::declined : Charge::Status::succeeded;
  ++result_.stats.reversals;
  step("vendor reverses " + c.key);
  send_callbacks(idx, true);
}

void Simulation::send_callbacks(std::size_t idx, bool until_acknowledged) {
  const Charge& c = ledger_[idx];
  Delivery d;
  d.event_id = "evt_" + std::to_string(deliveries_.size() + 1);
  d.key = c.key;
  d.status = c.status == Charge::Status::succeeded  ? store::CallbackStatus::succeeded
             : c.status == Charge::Status::declined ? store::CallbackStatus::declined
                                                    : store::CallbackStatus::pending;
  d.amount = c.request.amount_minor;
  d.currency = c.request.currency;
  d.reference = c.reference;
  schedule_delivery(d, until_acknowledged);
}

void Simulation::schedule_delivery(const Delivery& d, bool until_acknowledged) {
  deliveries_.push_back(d);
  const std::size_t k = deliveries_.size() - 1;
  if (!until_acknowledged && rng_.chance(profile_.p_callback_lost)) return;  // the vendor never manages to deliver it
  schedule(clock_.now_ms() + rng_.between(200, 20 * second), Kind::callback, k);
  if (rng_.chance(profile_.p_callback_dup)) schedule(clock_.now_ms() + rng_.between(1 * second, 2 * minute), Kind::callback, k);
  if (rng_.chance(profile_.p_callback_late)) schedule(clock_.now_ms() + rng_.between(1 * hour, 10 * hour), Kind::callback, k);
}

std::optional<Charge> Simulation::ledger_truth(const std::string& key) const {
  std::optional<Charge> found;
  for (const auto& c : ledger_)
    if (c.key == key) found = c;
  return found;
}

void Simulation::on_vendor_receive_refund(std::size_t i) {
  const Request& r = requests_[i];
  ++result_.stats.refund_calls;
  const providers::RefundRequest req = engine::refund_request_of(r.call.payment);
  // What payorch had committed of the refunded payment when the vendor heard of its refund.
  const auto payment = db_->tx().find_payment_by_id(r.call.payment.refund_of->id);
  refund_calls_.push_back(RefundCall{req.client_key, r.call.payment.refund_of->id,
                                     payment && payment->state == PaymentState::succeeded});
  const bool submit = r.call.call == CallKind::submit;
  if (!submit) {
    if (!lookup_answered(i, req.client_key)) return;
    const VendorRefund* found = refund_truth(req.client_key);
    if (!found || !searchable(found->committed_at)) answer_later(i, VendorResult{VendorOutcome::not_found, {}, {}, {}, {}, 404, "no such refund"});
    else answer_later(i, answer_for(*found));
    return;
  }
  if (committing_.contains(req.client_key)) {
    ++result_.stats.vendor_faults;
    answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 409, "a request with this key is in progress"});
    return;
  }
  if (const VendorRefund* found = refund_truth(req.client_key); found && opts_.defect != Defect::vendor_ignores_key) {
    if (found->request.amount_minor != req.amount_minor || found->request.charge_reference != req.charge_reference) {
      answer_later(i, VendorResult{VendorOutcome::key_mismatch, {}, {}, {}, {}, 422, "key used with other parameters"});
      return;
    }
    if (faults_on() && rng_.chance(profile_.p_commit_then_lost)) {
      ++result_.stats.vendor_faults;
      return;
    }
    answer_later(i, answer_for(*found));
    return;
  }
  if (faults_on() && rng_.chance(profile_.p_fail_before_commit)) {
    ++result_.stats.vendor_faults;
    answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 500, "failed before commit"});
    return;
  }
  if (faults_on() && rng_.chance(profile_.p_delayed_commit)) {
    ++result_.stats.vendor_faults;
    committing_.insert(req.client_key);
    schedule(clock_.now_ms() + rng_.between(1 * second, 20 * second), Kind::vendor_commit, i);
    if (rng_.chance(0.5)) answer_later(i, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 504, "gateway timeout"});
    return;
  }
  commit_refund(req, i);
}

void Simulation::commit_refund(const providers::RefundRequest& req, std::optional<std::size_t> answer_to) {
  std::optional<std::size_t> charge;
  for (std::size_t k = 0; k < ledger_.size(); ++k)
    if (ledger_[k].reference == req.charge_reference) charge = k;
  if (!charge) {
    // payorch only sends the charge id a vendor answer or callback gave it.
    violation("the vendor was asked to refund " + req.charge_reference + ", a charge it never made");
    if (answer_to) answer_later(*answer_to, VendorResult{VendorOutcome::not_found, {}, {}, {}, {}, 404, "no such charge"});
    return;
  }
  const Charge& c = ledger_[*charge];
  std::int64_t refunded = 0;
  for (const auto& vr : vendor_refunds_)
    if (vr.charge == *charge && vr.succeeded) refunded += vr.request.amount_minor;
  VendorRefund v;
  v.key = req.client_key;
  v.request = req;
  v.charge = *charge;
  v.reference = "rf_" + std::to_string(vendor_refunds_.size() + 1);
  v.committed_at = clock_.now_ms();
  if (c.status != Charge::Status::succeeded) v.decline_code = "charge_not_refundable";
  else if (req.amount_minor > c.request.amount_minor - refunded) v.decline_code = "exceeds_charge";
  v.succeeded = v.decline_code.empty();
  vendor_refunds_.push_back(v);
  refund_keys_[v.key] = vendor_refunds_.size() - 1;
  ++result_.stats.vendor_refunds;
  step("vendor commits refund " + v.key + (v.succeeded ? " as succeeded" : " as declined " + v.decline_code));
  Delivery d;
  d.event_id = "evt_" + std::to_string(deliveries_.size() + 1);
  d.key = v.key;
  d.about_refund = true;
  d.status = v.succeeded ? store::CallbackStatus::succeeded : store::CallbackStatus::declined;
  d.amount = req.amount_minor;
  d.currency = req.currency;
  d.reference = v.reference;
  schedule_delivery(d);
  if (!answer_to) return;
  if (faults_on() && rng_.chance(profile_.p_commit_then_lost)) {
    ++result_.stats.vendor_faults;
    return;
  }
  if (faults_on() && rng_.chance(profile_.p_commit_then_5xx)) {
    ++result_.stats.vendor_faults;
    answer_later(*answer_to, VendorResult{VendorOutcome::ambiguous, {}, {}, {}, {}, 502, "bad gateway after commit"});
    return;
  }
  answer_later(*answer_to, answer_for(v));
}

VendorResult Simulation::answer_for(const VendorRefund& r) const {
  VendorResult v;
  v.http_status = 200;
  v.vendor_reference = r.reference;
  v.amount_minor = r.request.amount_minor;
  v.currency = r.request.currency;
  if (r.succeeded) {
    v.outcome = VendorOutcome::succeeded;
    v.detail = "succeeded";
  } else {
    v.outcome = VendorOutcome::declined;
    v.decline_code = r.decline_code;
    v.detail = "declined";
  }
  return v;
}

const VendorRefund* Simulation::refund_truth(const std::string& key) const {
  auto it = refund_keys_.find(key);
  return it == refund_keys_.end() ? nullptr : &vendor_refunds_[it->second];
}

}  // namespace payorch::dst
