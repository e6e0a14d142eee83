#include <boost/asio/post.hpp>

#include "delivery/deliverer.h"
#include "store/outbox.h"
#include "util/log.h"

namespace payorch::delivery {
namespace {

constexpr const char* purged_metric = "payorch_retention_purged_total";

}  // namespace

// One pass: the inbox first, then delivered events, a batch per writer job.
struct Retention::Pass {
  UnixMillis inbox_before = 0;
  UnixMillis events_before = 0;
  bool inbox_done = false;
  int inbox = 0;
  int events = 0;
  std::function<void(int, int)> done;

  void finish() {
    if (done) done(inbox, events);
  }
};

Retention::Retention(const config::Config& config, store::Store& store, const Clock& clock,
                     boost::asio::io_context& ioc, Metrics& metrics, Millis interval)
    : config_(config),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      strand_(boost::asio::make_strand(ioc)),
      timer_(strand_),
      interval_(interval) {
  metrics_.declare_counter(purged_metric,
                           "Rows deleted by retention, by table (callback_inbox, outbox).");
}

void Retention::start() {
  boost::asio::post(strand_, [this] {
    if (stopped_) return;
    running_ = true;
    run_once([this](int, int) { running_ = false; });
    schedule();
  });
}

void Retention::stop() {
  stopped_ = true;
  boost::asio::post(strand_, [this] { timer_.cancel(); });
}

void Retention::schedule() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) return;
    if (!running_.exchange(true)) run_once([this](int, int) { running_ = false; });
    schedule();
  });
}

void Retention::run_once(std::function<void(int, int)> done) {
  auto pass = std::make_shared<Pass>();
  const UnixMillis now = clock_.now_ms();
  pass->inbox_before = now - config_.retention.callback_inbox.count();
  pass->events_before = now - config_.retention.delivered_events.count();
  pass->done = std::move(done);
  step(std::move(pass));
}

void Retention::step(std::shared_ptr<Pass> pass) {
  if (stopped_) return pass->finish();
  const bool inbox = !pass->inbox_done;
  auto deleted = std::make_shared<int>(0);
  store_.submit(
      [pass, inbox, deleted](store::Tx& tx) {
        *deleted = inbox ? tx.purge_callback_inbox(pass->inbox_before, batch)
                         : tx.purge_delivered_events(pass->events_before, batch);
      },
      [this, pass, inbox, deleted](store::WriteStatus status, const std::string& error) {
        if (status != store::WriteStatus::committed) {
          if (status != store::WriteStatus::stopped)
            log::error("retention.purge_failed", error,
                       {{"table", inbox ? "callback_inbox" : "outbox"}, {"status", to_string(status)}});
          return pass->finish();  // the next pass tries again
        }
        if (*deleted > 0)
          metrics_.inc(purged_metric, {{"table", inbox ? "callback_inbox" : "outbox"}},
                       static_cast<std::uint64_t>(*deleted));
        (inbox ? pass->inbox : pass->events) += *deleted;
        if (*deleted < batch) {
          if (!inbox) return pass->finish();
          pass->inbox_done = true;
        }
        step(pass);
      });
}

}  // namespace payorch::delivery
