#pragma once
// systemd's watchdog (WatchdogSec=, seen as WATCHDOG_USEC): every `interval` a no-op job goes
// through the store's writer, and once the writer thread has run it, `ping` (WATCHDOG=1) runs
// from the io_context. So a ping proves both that the event loop runs handlers and that the
// single writer still takes work; if either is stuck the pings stop and systemd restarts
// payorchd. A probe still outstanding when the next one is due is not doubled.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <mutex>

#include "store/store.h"

namespace payorch::daemon {

class Watchdog {
public:
  using Ping = std::function<void()>;
  Watchdog(boost::asio::io_context& ioc, store::Store& store, std::chrono::microseconds interval,
           Ping ping);

  void start();
  // No ping is sent once this returns (the drain has begun: STOPPING=1 comes after it).
  void stop();

private:
  bool stopped();
  void probe();

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  store::Store& store_;
  std::chrono::microseconds interval_;
  Ping ping_;
  bool probing_ = false;  // on strand_ only
  std::mutex mu_;         // orders pings before stop()
  bool stopped_ = false;
};

}  // namespace payorch::daemon
