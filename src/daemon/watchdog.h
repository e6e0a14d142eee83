#pragma once
// systemd's watchdog (WatchdogSec=, seen as WATCHDOG_USEC): every `interval` a no-op job goes
// through the store's writer, and once the writer thread has run it, `ping` (WATCHDOG=1) runs
// from the io_context. So a ping proves both that the event loop runs handlers and that the
// single writer still takes work; if either is stuck the pings stop and systemd restarts
// payorchd. A probe still outstanding when the next one is due is not doubled.
//
// The time of the last answered probe is on GET /metrics
// (payorch_watchdog_last_ok_timestamp_seconds), so a monitor sees the writer falling behind
// before systemd's restart.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "core/clock.h"
#include "store/store.h"

namespace payorch::daemon {

class Watchdog {
public:
  using Ping = std::function<void()>;
  Watchdog(boost::asio::io_context& ioc, store::Store& store, const Clock& clock,
           std::chrono::microseconds interval, Ping ping);

  void start();
  // No ping is sent once this returns (the drain has begun: STOPPING=1 comes after it).
  void stop();

  // When a probe last came back from the writer; nullopt before the first.
  std::optional<UnixMillis> last_ok() const;
  // payorch_watchdog_last_ok_timestamp_seconds and payorch_watchdog_interval_seconds.
  std::string render_metrics() const;

private:
  bool stopped();
  void probe();

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  store::Store& store_;
  const Clock& clock_;
  std::chrono::microseconds interval_;
  Ping ping_;
  bool probing_ = false;  // on strand_ only
  mutable std::mutex mu_;  // orders pings before stop()
  bool stopped_ = false;
  std::optional<UnixMillis> last_ok_;  // under mu_
};

}  // namespace payorch::daemon
