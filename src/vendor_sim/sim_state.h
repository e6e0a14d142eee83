#pragma once
// The sim's run-time switches and its clock, shared by the charge logic, the dispatcher and
// the control API. Owned by the sim's logic thread: no locking.
#include <cstdint>

#include "core/clock.h"
#include "vendor_sim/ledger.h"
#include "vendor_sim/options.h"

namespace payorch::vendor_sim {

// The wall clock moved by clock_offset_ms: key expiry, pending settlement and callback
// scheduling all read this clock. (Signature timestamps do not: a receiver checks them
// against its own wall clock.)
class SimClock final : public Clock {
public:
  SimClock(const Clock& wall, const SimConfig& config) : wall_(wall), config_(config) {}
  UnixMillis now_ms() const override { return wall_.now_ms() + config_.clock_offset_ms; }
  MonotonicTime monotonic() const override { return wall_.monotonic(); }

private:
  const Clock& wall_;
  const SimConfig& config_;
};

struct SimState {
  SimState(const Clock& wall, SimConfig initial, bool with_callback_url)
      : config(initial), clock(wall, config), callbacks_configured(with_callback_url) {}
  SimState(const SimState&) = delete;
  SimState& operator=(const SimState&) = delete;

  SimConfig config;
  SimClock clock;
  const bool callbacks_configured;  // a --callback-url was given

  // How many deliveries a callback queued now is owed: none while callbacks are off (events
  // that happen meanwhile are never announced, like a vendor that lost them).
  CallbackCopies callback_copies() const {
    if (!callbacks_configured || !config.callbacks_enabled) return std::nullopt;
    return config.duplicate_callbacks ? 2 : 1;
  }
};

}  // namespace payorch::vendor_sim
