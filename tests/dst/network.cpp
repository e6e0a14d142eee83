// The network between payorch and the vendor: calls that are never sent, latency, answers that
// come back or time out, workers that stall past their lease; and the vendor's callbacks
// delivered into payorch (duplicates and late ones included).
#include "dst/simulator.h"

#include <algorithm>
#include <optional>
#include <string>

#include "store/callbacks.h"
#include "engine/steps.h"
#include "net/http_types.h"
#include "providers/vendor_call.h"
#include "store/store.h"

namespace payorch::dst {
namespace {

// A request that got no answer, classified as every adapter classifies it
// (providers::without_answer): the simulation runs the real rule, not a copy of it.
VendorResult without_answer(net::HttpResult::Kind kind, net::HttpResult::Failure failure, std::string error) {
  net::HttpResult res;
  res.kind = kind;
  res.failure = failure;
  res.error = std::move(error);
  return *providers::without_answer(res);
}

}  // namespace

void Simulation::send(std::size_t e, const engine::Call& call) {
  Request r;
  r.call = call;
  r.engine = static_cast<int>(e);
  r.incarnation = incarnation_;
  r.sent_at = clock_.now_ms();
  requests_.push_back(r);
  const std::size_t i = requests_.size() - 1;
  payment_of_key_[call.payment.client_key] = call.payment.id;
  ++engines_[e].in_flight;
  step(std::string("send ") + std::string(to_string(call.call)) + " " + call.payment.client_key, call.fence);
  // A refund payorch cannot send yet (engine.cpp call_vendor): no call is made, the answer is
  // not_sent. The sim vendor makes refunds (supports_refunds()); the charge id may be unknown.
  if (call.payment.refund_of && engine::refund_request_of(call.payment).charge_reference.empty()) {
    requests_[i].result = VendorResult{VendorOutcome::not_sent, {}, {}, {}, {}, 0,
                                       "the refunded payment's vendor charge id is not known"};
    schedule(clock_.now_ms(), Kind::response, i);
    return;
  }
  if (faults_on() && rng_.chance(profile_.p_not_sent)) {
    ++result_.stats.vendor_faults;
    requests_[i].result = without_answer(net::HttpResult::not_sent, net::HttpResult::Failure::refused, "connection refused");
    schedule(clock_.now_ms() + rng_.between(1, 50), Kind::response, i);
    return;
  }
  schedule(clock_.now_ms() + rng_.between(1, 300), Kind::vendor_receive, i);
  schedule(clock_.now_ms() + call.contract.request_timeout.count(), Kind::timeout, i);
}

void Simulation::answer_later(std::size_t i, VendorResult result) {
  requests_[i].result = std::move(result);
  schedule(clock_.now_ms() + rng_.between(1, 300), Kind::response, i);
}

void Simulation::on_response(std::size_t i, bool timed_out) {
  Request& r = requests_[i];
  if (r.answered || r.incarnation != incarnation_) return;  // late, or its process died
  r.answered = true;
  if (timed_out)
    r.result = without_answer(net::HttpResult::sent_no_answer, net::HttpResult::Failure::timeout,
                              "request timed out after sending");
  UnixMillis at = clock_.now_ms();
  if (faults_on() && rng_.chance(profile_.p_pause)) {
    // The worker stalls (a long GC pause, SIGSTOP) until its lease has lapsed.
    ++result_.stats.paused_workers;
    at = r.sent_at + r.call.contract.lease.count() + rng_.between(1, 20 * second);
  }
  schedule(at, Kind::record, i);
}

void Simulation::on_callback(std::size_t k) {
  const Delivery& d = deliveries_[k];
  ++result_.stats.callbacks;
  const bool acked_before = acked_events_.contains(d.event_id);
  if (acked_before) ++result_.stats.duplicate_callbacks;
  store::VendorCallback cb;
  cb.provider = provider_name;
  cb.event_id = d.event_id;
  if (opts_.defect == Defect::drop_callback_inbox && acked_before) cb.event_id += "-again";
  cb.client_key = d.key;
  cb.about_refund = d.about_refund;
  cb.status = d.status;
  cb.vendor_reference = d.reference;
  cb.amount_minor = d.amount;
  cb.currency = d.currency;
  cb.payload = "{\"id\":\"" + d.event_id + "\"}";
  // A final answer about a terminal payment it contradicts (a reversal, or the first word
  // arriving after the reversal's).
  std::optional<Payment> was;
  bool case_open_before = false;
  const PaymentState answer = d.status == store::CallbackStatus::succeeded ? PaymentState::succeeded : PaymentState::failed_final;
  if (!d.about_refund && d.status != store::CallbackStatus::pending) {
    if (auto id = payment_of_key_.find(d.key); id != payment_of_key_.end()) {
      was = db_->tx().find_payment_by_id(id->second);
      if (was && (!is_terminal(was->state) || was->state == answer)) was.reset();
      if (was) case_open_before = open_case_of(was->id);
    }
  }
  std::optional<store::CallbackOutcome> out;
  std::int64_t changes_before = 0, changes_after = 0;
  const TxnEnd end = transact("callback " + d.event_id + " for " + d.key, [&](store::Tx& tx) {
    changes_before = db_->rows_written();
    out = tx.record_callback(cb, clock_.now_ms(), ids_);
    changes_after = db_->rows_written();
  });
  if (end == TxnEnd::crashed_before_commit) {
    // No 2xx: the vendor retries.
    schedule(clock_.now_ms() + rng_.between(10 * second, 2 * minute), Kind::callback, k);
    return;
  }
  // Invariant 7: an event already acknowledged has no second effect.
  if (acked_before && (out->result != store::CallbackResult::duplicate || changes_after != changes_before))
    violation("invariant 7: callback " + d.event_id + " delivered again had an effect (" +
              std::string(store::to_string(out->result)) + ", " + std::to_string(changes_after - changes_before) + " row(s) written)");
  if (was && out->result != store::CallbackResult::duplicate)
    check_late_contradiction("callback " + d.event_id, *was, answer, case_open_before);
  if (end == TxnEnd::committed) acked_events_.insert(d.event_id);
  else schedule(clock_.now_ms() + rng_.between(10 * second, 2 * minute), Kind::callback, k);  // 2xx never sent
  for (auto& e : engines_) e.next_poll = std::min(e.next_poll, clock_.now_ms());
}

}  // namespace payorch::dst
