#include "core/risk.h"

#include <algorithm>

#include "core/enum_names.h"

namespace payorch {

bool at_risk_cap(const RiskCap& cap, const ExposureFigures& now) {
  return now.count >= cap.max_unknown_count || now.amount_minor >= cap.max_unknown_amount_minor;
}

bool would_exceed_risk_cap(const RiskCap& cap, const ExposureFigures& now, std::int64_t amount_minor) {
  if (now.count + 1 > cap.max_unknown_count) return true;
  if (now.amount_minor == 0 && cap.max_unknown_amount_minor > 0) return false;
  return now.amount_minor > cap.max_unknown_amount_minor - amount_minor;  // no overflow: both ≤ 2^53
}

int Breaker::allowance(int free, UnixMillis now) const {
  if (free <= 0) return 0;
  if (state_ == State::closed) return free;
  return !probe_in_flight_ && now >= next_probe_at_ ? 1 : 0;
}

bool Breaker::claimed(int n, UnixMillis now) {
  if (state_ == State::closed || n <= 0) return false;
  probe_in_flight_ = true;
  next_probe_at_ = now + options_.probe_interval.count();
  return true;
}

Breaker::Change Breaker::record(bool not_sent, bool probe, UnixMillis now) {
  if (probe) probe_in_flight_ = false;
  if (!not_sent) {
    consecutive_ = 0;
    if (state_ == State::closed) return Change::none;
    state_ = State::closed;
    return Change::closed;
  }
  consecutive_ = std::min(consecutive_ + 1, options_.failures_to_open);
  // Open: the probe (or a call sent before the breaker opened) failed; the next probe waits for
  // probe_interval from when the last one was claimed.
  if (state_ == State::open) return Change::none;
  if (consecutive_ < options_.failures_to_open) return Change::none;
  state_ = State::open;
  probe_in_flight_ = false;
  next_probe_at_ = now + options_.probe_interval.count();
  return Change::opened;
}

namespace {

constexpr EnumNames<Breaker::State, 2> breaker_state_names{{
    {Breaker::State::closed, "closed"},
    {Breaker::State::open, "open"},
}};

}  // namespace

std::string_view to_string(Breaker::State s) { return name_of(breaker_state_names, s); }

}  // namespace payorch
