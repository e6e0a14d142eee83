#include "daemon/watchdog.h"

#include <boost/asio/post.hpp>

#include "util/metrics.h"

namespace payorch::daemon {

Watchdog::Watchdog(boost::asio::io_context& ioc, store::Store& store, const Clock& clock,
                   std::chrono::microseconds interval, Ping ping)
    : strand_(boost::asio::make_strand(ioc)), timer_(strand_), store_(store), clock_(clock),
      interval_(interval), ping_(std::move(ping)) {}

std::optional<UnixMillis> Watchdog::last_ok() const {
  std::lock_guard lock(mu_);
  return last_ok_;
}

std::string Watchdog::render_metrics() const {
  std::vector<std::pair<Labels, double>> last;
  if (const auto at = last_ok()) last.push_back({{}, static_cast<double>(*at) / 1000.0});
  return render_gauge("payorch_watchdog_last_ok_timestamp_seconds",
                      "When the watchdog's last probe came back from the store's writer (Unix time); "
                      "no sample before the first",
                      last) +
         render_gauge("payorch_watchdog_interval_seconds",
                      "How often the watchdog probes the writer and pings systemd (half of WatchdogSec)",
                      {{{}, std::chrono::duration<double>(interval_).count()}});
}

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
                       if (!stopped_ && status != store::WriteStatus::stopped) {
                         last_ok_ = clock_.now_ms();
                         ping_();
                       }
                     });
                   });
  }
  timer_.expires_after(interval_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) probe();
  });
}

}  // namespace payorch::daemon
