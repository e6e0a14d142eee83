#include "daemon/watchdog.h"

#include <boost/asio/post.hpp>

namespace payorch::daemon {

Watchdog::Watchdog(boost::asio::io_context& ioc, store::Store& store,
                   std::chrono::microseconds interval, Ping ping)
    : strand_(boost::asio::make_strand(ioc)), timer_(strand_), store_(store),
      interval_(interval), ping_(std::move(ping)) {}

void Watchdog::start() {
  boost::asio::post(strand_, [this] { probe(); });
}

void Watchdog::stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  boost::asio::post(strand_, [this] { timer_.cancel(); });
}

bool Watchdog::stopped() {
  std::lock_guard lock(mu_);
  return stopped_;
}

void Watchdog::probe() {
  if (stopped()) return;
  if (!probing_) {
    probing_ = true;
    store_.submit([](store::Tx&) {},
                   [this](store::WriteStatus status, const std::string&) {
                     boost::asio::post(strand_, [this, status] {
                       probing_ = false;
                       // Any answer but `stopped` shows the writer thread at work (a busy or
                       // failed disk is reported by the requests themselves, not by a restart).
                       std::lock_guard lock(mu_);
                       if (!stopped_ && status != store::WriteStatus::stopped) ping_();
                     });
                   });
  }
  timer_.expires_after(interval_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) probe();
  });
}

}  // namespace payorch::daemon
