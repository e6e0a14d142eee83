#include "daemon/drain.h"

namespace payorch::daemon {

namespace {
constexpr std::chrono::milliseconds drain_checked_every{20};
}  // namespace

DrainWait::DrainWait(boost::asio::io_context& ioc, const Clock& clock, std::function<bool()> drained,
                     std::function<void(bool complete)> finished)
    : timer_(ioc), clock_(clock), drained_(std::move(drained)), finished_(std::move(finished)) {}

void DrainWait::start(std::chrono::milliseconds limit) {
  deadline_ = clock_.monotonic() + limit;
  check();
}

void DrainWait::check() {
  const bool drained = drained_();
  if (drained || clock_.monotonic() > deadline_) return finished_(drained);
  timer_.expires_after(drain_checked_every);
  timer_.async_wait([this](boost::system::error_code) { check(); });
}

}  // namespace payorch::daemon
