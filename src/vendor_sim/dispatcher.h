#pragma once
// Time-driven work of the sim, on its logic executor: pending charges settle when their time
// comes (sim clock), and queued callbacks are POSTed, signed, and retried with exponential
// backoff until acknowledged (any 2xx) or older than the horizon. The queue is the ledger's
// callbacks table, so delivery resumes after a restart (at least once: a callback acknowledged
// just before a crash may be sent again; receivers dedup on the event id).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>
#include <string>
#include <vector>

#include "vendor_sim/callback_client.h"
#include "vendor_sim/ledger.h"
#include "vendor_sim/sim_state.h"

namespace payorch::vendor_sim {

struct DispatcherSettings {
  std::optional<HttpUrl> callback_url;  // nullopt: callbacks are never sent
  std::string secret;                   // never logged
  Millis initial_backoff{1'000};
  Millis max_backoff{60'000};
  Millis horizon{std::chrono::hours(24)};
  Millis timeout{5'000};
};

// The wait before retry number `failures` (1 = after the first failure): initial, doubled per
// failure, capped at max.
Millis retry_delay(std::int64_t failures, Millis initial, Millis max);

class Dispatcher {
public:
  // `wall` (not the sim clock) stamps signatures: the receiver checks them against its own.
  Dispatcher(boost::asio::any_io_executor executor, Ledger& ledger, SimState& state,
             const Clock& wall, DispatcherSettings settings);

  // Starts the polling loop. Logic thread only, like every method here.
  void start();
  // Runs a pass soon: something became due (a callback was queued, the clock moved).
  void kick();
  // No new pass and no new delivery; answers of deliveries in flight are ignored (those
  // callbacks stay queued and are sent again after a restart).
  void stop();

private:
  void pass();
  void deliver(const QueuedCallback& cb);
  void on_result(const QueuedCallback& cb, const PostResult& result);

  boost::asio::any_io_executor executor_;
  Ledger& ledger_;
  SimState& state_;
  const Clock& wall_;
  DispatcherSettings settings_;
  boost::asio::steady_timer timer_;
  std::vector<std::string> in_flight_;  // event ids being delivered
  bool stopped_ = false;
};

}  // namespace payorch::vendor_sim
