#pragma once
// Push delivery of outbox events to tenants' webhooks (docs/contract.md §6): at least once, in order per
// payment, signed `Payorch-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`,
// retried with backoff while the receiver is down. An event is marked delivered only after its
// receiver answered 2xx, and a delivered event is never pushed again; a crash between the 2xx
// and that commit repeats the push once, with the same event id (receivers dedup on it).
//
// Each push is a POST of the event's stored payload, byte for byte, with the headers
// Content-Type: application/json, Payorch-Signature, Payorch-Event-Id and Payorch-Event-Type.
// Any answer but a 2xx — another status, a refused connection, a timeout — is a failed attempt.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/clock.h"
#include "net/http_client.h"
#include "store/read_pool.h"
#include "store/store.h"
#include "util/metrics.h"

namespace payorch::delivery {

// The backoff before push attempt `attempts + 1` after `attempts` failures: initial × 2^(n-1),
// capped at max, with up to 20 % jitter subtracted (`jitter` in [0, 1)).
Millis webhook_backoff(std::int64_t attempts, Millis initial, Millis max, double jitter);

class Deliverer {
public:
  // Pushes in flight at once, over all tenants (each payment has at most one), and for one
  // tenant: a slow receiver holds at most half the slots, the others keep going.
  static constexpr std::size_t max_in_flight = 16;
  static constexpr std::size_t max_in_flight_per_tenant = 8;

  // How long an event taken for a push is held back from other nodes' selections on a shared
  // store (Tx::due_deliveries): the push's own bound (webhook.timeout, connect included) and
  // room to commit its result. A node that dies mid-push leaves its events to the others once
  // this lapses; a push still running then may be made a second time, which at-least-once
  // delivery allows (the tenant deduplicates on the event id).
  static Millis push_claim(const config::Webhook& hook) { return hook.timeout + Millis{10'000}; }

  struct Deps {
    const config::Config& config;
    store::Store& store;
    const Clock& clock;
    Random& rng;
    boost::asio::io_context& ioc;
    Metrics& metrics;
  };
  explicit Deliverer(Deps deps);
  ~Deliverer();
  Deliverer(const Deliverer&) = delete;
  Deliverer& operator=(const Deliverer&) = delete;

  // Starts polling (every engine.poll_interval, and at once when poked). Does nothing when no
  // tenant has a webhook.
  void start();
  // New events were committed: look now rather than at the next tick. Any thread; pokes that
  // arrive before the look are coalesced into one.
  void poke();
  // Stops starting pushes, lets the ones in flight finish (each bounded by its timeout) and
  // records their results, then calls `done` on the io_context. Any thread.
  void stop(std::function<void()> done);

  // Pushes started whose result is not yet committed. Any thread.
  std::size_t in_flight() const { return in_flight_count_.load(); }

private:
  struct Push;
  // Everything below runs on strand_.
  void schedule(Millis after);
  void poll();
  void dispatch(std::vector<store::OutboxEvent> due);
  void send(std::shared_ptr<Push> push);
  void record(std::shared_ptr<Push> push, bool delivered, std::string error);
  void maybe_finish_stop();

  Deps d_;
  std::vector<std::string> tenants_;                       // those with a webhook
  std::map<std::string, const config::Webhook*> webhooks_;  // by tenant id
  std::unique_ptr<net::HttpClient> client_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  std::set<std::string> in_flight_;  // event ids being pushed or recorded
  std::map<std::string, std::size_t> in_flight_by_tenant_;
  std::size_t first_tenant_ = 0;     // where the next poll starts (round robin)
  std::atomic<std::size_t> in_flight_count_{0};
  std::atomic<bool> poke_pending_{false};
  bool stopping_ = false;
  bool fetching_ = false;    // a claim of due events (shared store) has not been answered yet
  bool poll_again_ = false;  // a poll came while fetching_: poll once it is answered
  std::function<void()> on_stopped_;
};

// Deletes callback-inbox rows and delivered events older than their retention windows
// (docs/contract.md §7 retention), in batches of `batch` rows through the writer (one job each, so a purge
// never holds the writer for long), once at start and then every `interval`. Payments, cases
// and undelivered events are never touched. Counts payorch_retention_purged_total{table=…}.
class Retention {
public:
  static constexpr int batch = 500;

  Retention(const config::Config& config, store::Store& store, const Clock& clock,
            boost::asio::io_context& ioc, Metrics& metrics,
            Millis interval = std::chrono::minutes(10));
  void start();
  // No new pass starts; a pass under way stops after its current batch. Any thread.
  void stop();
  // One pass now, with the windows measured back from clock.now_ms() at the call; calls
  // `done(inbox_rows, events)` on the writer thread when finished (or stopped).
  void run_once(std::function<void(int, int)> done = {});

private:
  struct Pass;
  void schedule();
  void step(std::shared_ptr<Pass> pass);

  const config::Config& config_;
  store::Store& store_;
  const Clock& clock_;
  Metrics& metrics_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  Millis interval_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> running_{false};  // a timer pass under way (the next tick skips)
};

}  // namespace payorch::delivery
