#pragma once
// The end of a SIGTERM drain: payorchd stops once everything in flight has finished, or at
// drain_limit (daemon/startup.h) with work still in flight.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>

#include "core/clock.h"

namespace payorch::daemon {

class DrainWait {
public:
  // `drained` says whether nothing is in flight any more; `finished(complete)` runs once, on
  // the io_context, when it does (complete) or when the limit passed first (not complete).
  // The limit is measured on `clock`'s monotonic time.
  DrainWait(boost::asio::io_context& ioc, const Clock& clock, std::function<bool()> drained,
            std::function<void(bool complete)> finished);

  // Checks at once, then every 20 ms, for at most `limit` from now.
  void start(std::chrono::milliseconds limit);

private:
  void check();

  boost::asio::steady_timer timer_;
  const Clock& clock_;
  std::function<bool()> drained_;
  std::function<void(bool)> finished_;
  MonotonicTime deadline_{};
};

}  // namespace payorch::daemon
