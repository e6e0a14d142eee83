#include "vendor_sim/dispatcher.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <exception>

#include "vendor_sim/signature.h"
#include "vendor_sim/vendor.h"
#include "util/log.h"

namespace payorch::vendor_sim {
namespace {

// How often due work is looked for without a kick. Short, because the sim clock can be moved
// (clock_offset_ms) and a test should not wait long for the settlement that makes due.
constexpr Millis poll_interval{100};
constexpr std::size_t max_in_flight = 8;

}  // namespace

Millis retry_delay(std::int64_t failures, Millis initial, Millis max) {
  Millis delay = initial;
  for (std::int64_t i = 1; i < failures && delay < max; ++i) delay *= 2;
  return std::min(delay, max);
}

Dispatcher::Dispatcher(boost::asio::any_io_executor executor, Ledger& ledger, SimState& state,
                       const Clock& wall, DispatcherSettings settings)
    : executor_(executor),
      ledger_(ledger),
      state_(state),
      wall_(wall),
      settings_(std::move(settings)),
      timer_(executor) {}

void Dispatcher::start() { kick(); }

void Dispatcher::kick() {
  boost::asio::post(executor_, [this] { pass(); });
}

void Dispatcher::stop() {
  stopped_ = true;
  timer_.cancel();
}

// One pass: settle (charges, then refunds), deliver, re-arm. A storage failure is logged and retried next pass.
void Dispatcher::pass() {
  if (stopped_) return;
  try {
    for (const Charge& c : ledger_.settle_due(state_.clock.now_ms(), state_.callback_copies()))
      log::info("charge.settled", "", {{"reference", c.params.reference}, {"charge_id", c.id},
                                        {"status", to_string(c.status)}});
    for (const Refund& r :
         ledger_.settle_due_refunds(state_.clock.now_ms(), state_.callback_copies()))
      log::info("refund.settled", "", {{"reference", r.params.reference}, {"refund_id", r.id},
                                        {"status", to_string(r.status)}});
    if (settings_.callback_url && state_.config.callbacks_enabled &&
        in_flight_.size() < max_in_flight) {
      for (const QueuedCallback& cb : ledger_.due_callbacks(
               state_.clock.now_ms(), max_in_flight - in_flight_.size(), in_flight_))
        deliver(cb);
    }
  } catch (const std::exception& e) {
    log::error("sim.storage_failed", e.what(), {{"op", "dispatcher"}});
  }
  timer_.expires_after(poll_interval);  // cancels an earlier wait: one loop at a time
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) pass();
  });
}

void Dispatcher::deliver(const QueuedCallback& cb) {
  in_flight_.push_back(cb.event_id);
  const std::int64_t t = wall_.now_ms() / 1000;
  post_json(executor_, *settings_.callback_url,
            {{"Sim-Signature", sign_callback(settings_.secret, t, cb.body)}}, cb.body,
            settings_.timeout, [this, cb](PostResult result) { on_result(cb, result); });
}

void Dispatcher::on_result(const QueuedCallback& cb, const PostResult& result) {
  in_flight_.erase(std::remove(in_flight_.begin(), in_flight_.end(), cb.event_id),
                   in_flight_.end());
  if (stopped_) return;
  const UnixMillis now = state_.clock.now_ms();
  try {
    if (result.status >= 200 && result.status < 300) {
      ledger_.callback_acked(cb.event_id, now);
      log::info("callback.delivered", "", {{"event_id", cb.event_id}, {"http_status", result.status}});
      kick();  // a duplicate copy may be owed at once
      return;
    }
    const std::string error = result.status ? "HTTP " + std::to_string(result.status)
                                            : result.error;
    const Millis delay =
        retry_delay(cb.attempts + 1, settings_.initial_backoff, settings_.max_backoff);
    std::optional<UnixMillis> next = now + delay.count();
    if (*next > cb.created_at + settings_.horizon.count()) next.reset();
    ledger_.callback_failed(cb.event_id, next, error);
    if (next)
      log::warn("callback.retry", error, {{"event_id", cb.event_id}, {"retry_in_ms", static_cast<std::int64_t>(delay.count())}});
    else
      log::error("callback.given_up", error + "; past the retry horizon", {{"event_id", cb.event_id}});
  } catch (const std::exception& e) {
    log::error("sim.storage_failed", e.what(), {{"op", "dispatcher"}});
  }
}

}  // namespace payorch::vendor_sim
