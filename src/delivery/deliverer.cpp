#include "delivery/deliverer.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <iterator>
#include <utility>

#include "config/secrets.h"
#include "core/backoff.h"
#include "core/signature.h"
#include "store/outbox.h"
#include "util/failpoint.h"
#include "util/log.h"

namespace payorch::delivery {
namespace {

constexpr const char* deliveries_metric = "payorch_webhook_deliveries_total";

bool is_2xx(const net::HttpResult& r) {
  return r.kind == net::HttpResult::response && r.status >= 200 && r.status < 300;
}

// What a failed attempt leaves in outbox.last_error: never the receiver's body.
std::string failure_of(const net::HttpResult& r) {
  if (r.kind == net::HttpResult::response) return "HTTP " + std::to_string(r.status);
  return std::string(net::to_string(r.kind)) + ": " + r.error;
}

}  // namespace

Millis webhook_backoff(std::int64_t attempts, Millis initial, Millis max, double jitter) {
  const Millis wait = doubled_wait(initial, max, attempts);
  const auto cut = static_cast<Millis::rep>(static_cast<double>(wait.count()) * 0.2 * jitter);
  return std::max(Millis(1), wait - Millis(cut));
}

struct Deliverer::Push {
  store::OutboxEvent event;
  const config::Webhook* webhook = nullptr;
};

Deliverer::Deliverer(Deps deps)
    : d_(std::move(deps)), strand_(boost::asio::make_strand(d_.ioc)), timer_(strand_) {
  for (const auto& t : d_.config.tenants) {
    if (!t.webhook) continue;
    tenants_.push_back(t.id);
    webhooks_[t.id] = &*t.webhook;
  }
  d_.metrics.declare_counter(deliveries_metric,
                             "Webhook push attempts by result (delivered = a 2xx answer).");
  if (!tenants_.empty()) {
    net::ClientOptions options;
    options.user_agent = "payorch-webhook";
    client_ = std::make_unique<net::HttpClient>(d_.ioc.get_executor(), options);
  }
}

Deliverer::~Deliverer() = default;

void Deliverer::start() {
  if (tenants_.empty()) return;
  boost::asio::post(strand_, [this] { schedule(Millis(0)); });
}

void Deliverer::poke() {
  if (tenants_.empty() || poke_pending_.exchange(true)) return;
  boost::asio::post(strand_, [this] {
    poke_pending_ = false;
    poll();
  });
}

void Deliverer::schedule(Millis after) {
  if (stopping_) return;
  timer_.expires_after(after);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    poll();
    schedule(d_.config.engine.poll_interval);
  });
}

void Deliverer::poll() {
  if (stopping_ || tenants_.empty() || in_flight_.size() >= max_in_flight) return;
  if (fetching_) {
    poll_again_ = true;
    return;
  }
  const std::vector<std::string> exclude(in_flight_.begin(), in_flight_.end());
  const UnixMillis now = d_.clock.now_ms();
  // One query per tenant, starting with a different one each time, so that no tenant's backlog
  // keeps the others waiting.
  first_tenant_ = (first_tenant_ + 1) % tenants_.size();
  struct Ask {
    std::string tenant;
    int n;         // how many it may take now
    Millis claim;  // push_claim of its webhook
  };
  std::vector<Ask> asks;
  std::size_t room = max_in_flight - in_flight_.size();
  for (std::size_t k = 0; k < tenants_.size() && room > 0; ++k) {
    const std::string& tenant = tenants_[(first_tenant_ + k) % tenants_.size()];
    const std::size_t busy = in_flight_by_tenant_[tenant];
    if (busy >= max_in_flight_per_tenant) continue;
    const std::size_t free = std::min(max_in_flight_per_tenant - busy, room);
    asks.push_back(Ask{tenant, static_cast<int>(free), push_claim(*webhooks_.at(tenant))});
    room -= free;
  }
  auto fetch = [asks, exclude, now](store::Tx& tx) {
    std::vector<store::OutboxEvent> due;
    for (const Ask& ask : asks) {
      auto got = tx.due_deliveries({ask.tenant}, now, ask.n, ask.claim, exclude);
      std::move(got.begin(), got.end(), std::back_inserter(due));
    }
    return due;
  };
  if (!d_.store.shared()) {
    std::vector<store::OutboxEvent> due;
    try {
      due = d_.store.read_value(fetch);
    } catch (const std::exception& e) {
      log::error("webhook.scan_failed", e.what());
      return;  // the next tick looks again
    }
    return dispatch(std::move(due));
  }
  // Other daemons push from the same outbox: taking an event is a claim (due_deliveries moves
  // its next attempt ahead in the same statement), committed before the push starts.
  fetching_ = true;
  auto due = std::make_shared<std::vector<store::OutboxEvent>>();
  d_.store.submit([fetch, due](store::Tx& tx) { *due = fetch(tx); },
                  [this, due](store::WriteStatus status, const std::string& error) {
                    boost::asio::post(strand_, [this, due, status, error] {
                      fetching_ = false;
                      if (status == store::WriteStatus::committed) {
                        dispatch(std::move(*due));
                      } else {
                        // Nothing was claimed: the events are due as they were.
                        log::error("webhook.scan_failed", error, {{"status", to_string(status)}});
                      }
                      if (std::exchange(poll_again_, false)) poll();
                      maybe_finish_stop();
                    });
                  });
}

void Deliverer::dispatch(std::vector<store::OutboxEvent> due) {
  // Stopping: a claimed event is not pushed now; its claim lapses and it is pushed again later,
  // by this daemon or another (at least once, the same event id).
  if (stopping_) return;
  for (auto& event : due) {
    const std::string tenant = event.tenant_id;
    in_flight_.insert(event.event_id);
    ++in_flight_by_tenant_[tenant];
    in_flight_count_ = in_flight_.size();
    send(std::make_shared<Push>(Push{std::move(event), webhooks_.at(tenant)}));
  }
}

void Deliverer::send(std::shared_ptr<Push> push) {
  const config::Webhook& hook = *push->webhook;
  net::Request req;
  req.method = "POST";
  req.url = hook.url;
  req.body = push->event.payload;
  req.headers = {
      {"Content-Type", "application/json"},
      // The secret as it is now: a reload (SIGHUP) may have rotated it since startup.
      {"Payorch-Signature",
       sign_timestamped(config::webhook_secret(d_.config, push->event.tenant_id),
                        d_.clock.now_ms() / 1000, req.body)},
      {"Payorch-Event-Id", push->event.event_id},
      {"Payorch-Event-Type", push->event.type},
  };
  req.connect_timeout = hook.timeout;
  req.timeout = hook.timeout;
  client_->request(std::move(req), [this, push](net::HttpResult r) {
    boost::asio::post(strand_, [this, push, r = std::move(r)] {
      const bool delivered = is_2xx(r);
      d_.metrics.inc(deliveries_metric, {{"result", delivered ? "delivered" : "failed"}});
      record(push, delivered, delivered ? std::string() : failure_of(r));
    });
  });
}

void Deliverer::record(std::shared_ptr<Push> push, bool delivered, std::string error) {
  // Crash point: the receiver acknowledged (2xx), nothing recorded. After a restart the event
  // is still undelivered and is pushed again with the same event id.
  if (delivered) failpoint::hit("delivery.push.after_response");
  struct Retry {
    std::int64_t attempts = 0;  // 0: nothing to retry (delivered, or the row is gone)
    Millis wait{0};
  };
  auto retry = std::make_shared<Retry>();
  const double j = jitter(d_.rng);
  d_.store.submit(
      [this, push, delivered, error, j, retry](store::Tx& tx) {
        *retry = Retry{};
        const UnixMillis now = d_.clock.now_ms();
        const std::string& id = push->event.event_id;
        if (delivered) {
          tx.mark_delivered(id, now);
          return;
        }
        // attempts from the row, not from the read that started the push: the job may run again
        // after a busy retry, and must write the same thing.
        const auto row = tx.find_event(id);
        if (!row || row->delivered_at) return;
        retry->attempts = row->attempts + 1;
        retry->wait = webhook_backoff(retry->attempts, push->webhook->initial_backoff,
                                      push->webhook->max_backoff, j);
        tx.mark_delivery_failed(id, error, now + retry->wait.count());
      },
      [this, push, error, retry](store::WriteStatus status, const std::string& write_error) {
        const store::OutboxEvent& e = push->event;
        // Not committed: the row is as before the push (undelivered), so it is pushed again.
        if (status != store::WriteStatus::committed)
          log::error("webhook.not_recorded", write_error + "; the event will be pushed again",
                     {{"event_id", e.event_id},
                      {"tenant_id", e.tenant_id},
                      {"payment_id", e.payment_id},
                      {"status", to_string(status)}});
        else if (retry->attempts == 1 || (retry->attempts > 0 && retry->attempts % 10 == 0))
          log::warn("webhook.retry", error,
                    {{"event_id", e.event_id},
                     {"event_type", e.type},
                     {"tenant_id", e.tenant_id},
                     {"payment_id", e.payment_id},
                     {"attempt", retry->attempts},
                     {"next_in_ms", static_cast<std::int64_t>(retry->wait.count())}});
        boost::asio::post(strand_, [this, push] {
          in_flight_.erase(push->event.event_id);
          --in_flight_by_tenant_[push->event.tenant_id];
          in_flight_count_ = in_flight_.size();
          if (stopping_) maybe_finish_stop();
          else poke();  // the payment's next event may be due now, and a slot is free
        });
      });
}

void Deliverer::stop(std::function<void()> done) {
  boost::asio::post(strand_, [this, done = std::move(done)]() mutable {
    stopping_ = true;
    on_stopped_ = std::move(done);
    timer_.cancel();
    maybe_finish_stop();
  });
}

void Deliverer::maybe_finish_stop() {
  if (!stopping_ || fetching_ || !in_flight_.empty() || !on_stopped_) return;
  auto done = std::move(on_stopped_);
  on_stopped_ = nullptr;
  boost::asio::post(d_.ioc, std::move(done));
}

}  // namespace payorch::delivery
