#pragma once
// The engine: workers that claim due payments by lease, call the vendor, and apply the outcome
// by fenced compare-and-set (docs/contract.md §3, §5). Every decision is core::plan / core::decide; this
// class only moves data between the store, the adapters and the clock.
//
// Life of one vendor call:
//   1. claim transaction (writer): lease claim (fence+1), plan, and — for a submit — mark the
//      submit started and count the attempt. Committed before anything is sent (invariant 1).
//   2. the call, on the io_context, bounded by the provider's request timeout (< lease).
//   3. outcome transaction (writer): decide + transition, conditional on the fence; a stale
//      worker's write changes nothing (invariant 5).
// A give-up committed by 1 or 3 (a case opened, automatic work stopped) is then fenced at the
// vendor where the adapter can (cancel by reference, docs/contract.md §5), and the answer recorded on the
// case in a transaction of its own; fences a previous run owed are sent at start.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/clock.h"
#include "core/decide.h"
#include "core/payment.h"
#include "core/risk.h"
#include "engine/steps.h"
#include "providers/adapter.h"
#include "store/store.h"
#include "store/leases.h"
#include "util/change_notifier.h"
#include "util/metrics.h"

namespace payorch::engine {

class Engine {
public:
  struct Deps {
    const config::Config& config;
    store::Store& store;
    const Clock& clock;
    Random& rng;
    boost::asio::io_context& ioc;
    std::map<std::string, providers::Adapter*> adapters;  // by provider name
    ChangeNotifier& changes;
    Metrics* metrics = nullptr;  // vendor calls and late contradictions are counted here when set
    std::string node_id = "payorchd";  // daemon::node_id: the first part of this engine's lease owner id
  };
  explicit Engine(Deps deps);

  void start();
  // Stops claiming, lets calls in flight finish (each is bounded by its request timeout),
  // releases the leases this engine holds, then calls `done` (on the io_context).
  void stop(std::function<void()> done);

  // True while the provider's exposure is at or over a risk cap: new intents get 503
  // intake-paused. Thread-safe.
  bool intake_paused(const std::string& provider) const;
  std::string last_error(const std::string& provider) const;
  // The provider's circuit breaker: "closed" or "open" (core/risk.h). Thread-safe.
  std::string breaker_state(const std::string& provider) const;
  // The lease owner id: node id, pid and a random suffix for this run (shown by /status).
  const std::string& owner() const { return owner_; }
  int in_flight() const { return in_flight_.load(); }

  // Runs one claim round now (tests and the poll timer).
  void poll();

private:
  struct Work;
  void schedule_poll(Millis after);
  void call_vendor(std::shared_ptr<Work> w);
  void record(std::shared_ptr<Work> w, providers::VendorResult result);
  // One vendor call answered: counted in /metrics (outcome, latency) and logged.
  void count_call(const Work& w, const providers::VendorResult& result,
                  MonotonicTime::duration took);
  // Sets each provider's intake-paused flag from the kept exposure (docs/contract.md §5: at or over a cap).
  void refresh_exposure(store::Tx& tx);
  // What the next claim round may take of each provider, out of `free` slots (breakers).
  std::vector<store::ClaimQuota> claim_quotas(int free) const;
  // Drops from `batch` the calls whose request timeout no longer fits in their lease, and
  // undoes their claims.
  void keep_sendable(std::vector<Work>& batch);
  // Tells the breakers what a committed claim took; marks the probes of open ones.
  void mark_probes(std::vector<Work>& batch);
  void count_breaker(const Work& w, const providers::VendorResult& result);
  // Sends the vendor-side fence for payments whose give-up just committed (where the adapter
  // supports one), and records each answer as evidence on the payment's open case. Best
  // effort: never changes a payment's state.
  void send_fences(const std::vector<FenceCall>& fences);
  void record_fence(const FenceCall& f, providers::VendorResult result);
  // At start: sends the fences a previous run owed and never recorded (fences_owed).
  void resend_owed_fences();
  void finish_stop();

  Deps d_;
  std::string owner_;
  std::map<std::string, Contract> contracts_;
  std::map<std::string, RiskCap> caps_;
  boost::asio::steady_timer timer_;
  std::atomic<int> in_flight_{0};
  std::atomic<bool> claiming_{false};
  std::atomic<bool> poll_again_{false};
  std::atomic<bool> stopping_{false};
  std::function<void()> on_stopped_;
  std::vector<Call> unsent_;  // claimed after the stop began: undone by finish_stop (io_context only)
  mutable std::mutex mu_;  // guards the fields below
  std::map<std::string, bool> paused_;
  std::map<std::string, std::string> last_error_;
  std::map<std::string, Breaker> breakers_;
};

}  // namespace payorch::engine
