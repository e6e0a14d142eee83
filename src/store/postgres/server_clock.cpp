#include "store/postgres/server_clock.h"

#include <algorithm>
#include <exception>

#include "store/postgres/connection.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/system_clock.h"

namespace payorch::store::pg {
namespace {

const SystemClock system_clock;

std::int64_t micros(Micros d) { return d.count(); }

}  // namespace

bool ServerTimeline::adopt(const ServerSample& s) {
  if (anchor_ && s.round_trip() / 2 > aged_bound(s.midpoint())) return false;
  anchor_ = s;
  return true;
}

Micros ServerTimeline::age(MonotonicTime t) const {
  return std::chrono::duration_cast<Micros>(t - anchor_->midpoint());
}

Micros ServerTimeline::aged_bound(MonotonicTime t) const {
  const Micros drift{std::max<std::int64_t>(0, micros(age(t))) * max_drift_ppm / 1'000'000};
  return anchor_->round_trip() / 2 + drift;
}

std::int64_t ServerTimeline::estimate_us(MonotonicTime t) const {
  return anchor_->server_us + micros(age(t));
}

UnixMillis ServerTimeline::now_ms(MonotonicTime t) {
  const std::int64_t est = estimate_us(t);
  // Floor, also before the epoch.
  const UnixMillis ms = est >= 0 ? est / 1000 : (est - 999) / 1000;
  last_ms_ = std::max(last_ms_, ms);
  return last_ms_;
}

Micros ServerTimeline::error_at(MonotonicTime t) const {
  const std::int64_t hold =
      last_ms_ == std::numeric_limits<UnixMillis>::min() ? 0 : last_ms_ * 1000 - estimate_us(t);
  return aged_bound(t) + Micros{std::max<std::int64_t>(0, hold)};
}

ServerClock::ServerClock(ServerClockOptions opts)
    : opts_(std::move(opts)), local_(opts_.local ? opts_.local : &system_clock) {
  try {
    timeline_.adopt(best_of_round());
  } catch (const Error& e) {
    throw Error(e.kind(), e.sqlstate(), e.constraint(),
                std::string("cannot read the database server's clock: ") + e.what());
  }
  const Offset o = offset();
  // A node whose own clock is a second or more off is worth an operator's look (its logs'
  // ts= are its own clock's), though payorch's stored times do not depend on it.
  const bool skewed = o.offset >= std::chrono::seconds(1) || o.offset <= -std::chrono::seconds(1);
  log::write(skewed ? log::Level::warn : log::Level::info, "clock.server",
             "this node's time follows the database server's clock",
             {{"offset_ms", micros(o.offset) / 1000},
              {"error_us", micros(o.error)},
              {"period_ms", std::int64_t{opts_.period.count()}}});
}

ServerClock::~ServerClock() { stop(); }

void ServerClock::start() {
  if (sampler_.joinable()) return;
  sampler_ = std::thread([this] { run(); });
}

void ServerClock::stop() {
  {
    std::lock_guard lk(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (sampler_.joinable()) sampler_.join();
  conn_.reset();
}

UnixMillis ServerClock::now_ms() const {
  const MonotonicTime t = local_->monotonic();
  std::lock_guard lk(mu_);
  return timeline_.now_ms(t);
}

ServerClock::Offset ServerClock::offset() const {
  const MonotonicTime t = local_->monotonic();
  const UnixMillis wall = local_->now_ms();
  std::lock_guard lk(mu_);
  return Offset{.offset = Micros{timeline_.estimate_us(t) - wall * 1000},
                .error = timeline_.error_at(t),
                .age = timeline_.age(t)};
}

ServerSample ServerClock::best_of_round() {
  if (!conn_ || !conn_->ok()) conn_ = std::make_unique<Connection>(opts_.url);
  std::optional<ServerSample> best;
  for (int i = 0; i < std::max(1, opts_.samples_per_round); ++i) {
    ServerSample s;
    s.sent = local_->monotonic();
    const Result r = conn_->exec(server_clock_statement);
    s.answered = local_->monotonic();
    s.server_us = r.integer(0, 0);
    if (!best || s.round_trip() < best->round_trip()) best = s;
  }
  return *best;
}

bool ServerClock::sample_round() {
  try {
    const ServerSample s = best_of_round();
    {
      std::lock_guard lk(mu_);
      timeline_.adopt(s);
    }
    if (failing_) {
      failing_ = false;
      log::info("clock.sample_resumed", "reading the database server's clock again",
                {{"error_us", micros(offset().error)}});
    }
    return true;
  } catch (const std::exception& e) {
    conn_.reset();
    if (!failing_) {
      failing_ = true;
      log::warn("clock.sample_failed",
                "cannot read the database server's clock; counting on from the last sample",
                {{"error", e.what()}, {"age_ms", micros(offset().age) / 1000}});
    }
    return false;
  }
}

void ServerClock::run() {
  std::unique_lock lk(stop_mu_);
  while (!stop_cv_.wait_for(lk, opts_.period, [this] { return stopping_; })) {
    lk.unlock();
    sample_round();
    lk.lock();
  }
}

std::string ServerClock::render_metrics() const {
  const Offset o = offset();
  const auto gauge = [](const char* name, const char* help, Micros v) {
    return render_gauge(name, help, {{Labels{}, static_cast<double>(v.count()) / 1e6}});
  };
  return gauge("payorch_clock_offset_seconds",
               "The database server's clock minus this node's own wall clock; this node's "
               "stored times follow the server's",
               o.offset) +
         gauge("payorch_clock_error_seconds",
               "How far this node's reading of the server's clock may be off", o.error) +
         gauge("payorch_clock_sample_age_seconds",
               "Since the sample of the server's clock this node counts from", o.age);
}

}  // namespace payorch::store::pg
