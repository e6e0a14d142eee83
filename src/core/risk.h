#pragma once
// Money at risk (docs/contract.md §5, invariant 8) and the per-provider circuit breaker: pure rules over
// figures the store keeps and outcomes the engine sees. Nothing here does I/O or reads a clock.
#include <cstdint>
#include <string_view>

#include "core/clock.h"

namespace payorch {

// A provider's risk caps: UNKNOWN payments plus submits in flight, counted per provider and
// summed in minor units per provider and currency. Read from providers[].risk (config/providers.cpp);
// these are its defaults.
struct RiskCap {
  std::int64_t max_unknown_count = 100;
  std::int64_t max_unknown_amount_minor = 10'000'000;
};

// A provider's exposure as a claim or an intake sees it: its count over every currency and its
// amount in the payment's currency.
struct ExposureFigures {
  std::int64_t count = 0;
  std::int64_t amount_minor = 0;
};

// At or over either cap: new intents for the provider get 503 intake-paused.
bool at_risk_cap(const RiskCap& cap, const ExposureFigures& now);

// Whether submitting one more payment of `amount_minor` would take the exposure over a cap: the
// check before a submit starts. A payment larger than the amount cap on its own may still go
// once nothing of its currency is exposed, or it would wait for ever (a cap of 0 still lets
// nothing go); the count cap holds exactly.
bool would_exceed_risk_cap(const RiskCap& cap, const ExposureFigures& now, std::int64_t amount_minor);

// A provider's circuit breaker over certain-not-sent failures (connect refused, DNS, TLS before
// the request). After `failures_to_open` consecutive ones it opens: claims stop taking the
// provider's payments, except one probe at a time, at most one per `probe_interval`. The first
// answer of any kind (the vendor was reached) closes it. A call that may have reached the
// vendor is an answer here: its payment goes UNKNOWN as always, and the breaker stays closed.
class Breaker {
public:
  // engine.breaker (`failures`, `probe_interval`) in the configuration; these are its defaults.
  struct Options {
    int failures_to_open = 5;
    Millis probe_interval{1'000};
  };
  enum class State { closed, open };
  enum class Change { none, opened, closed };

  Breaker() = default;
  explicit Breaker(Options options) : options_(options) {}

  // How many of the provider's payments a claim round may take out of `free` slots now: all of
  // them when closed; one probe when open, the last probe is over and probe_interval has passed.
  int allowance(int free, UnixMillis now) const;
  // A claim round took `n` calls for the provider (counted before they are sent). Returns
  // whether they are the probe of an open breaker.
  bool claimed(int n, UnixMillis now);
  // One call of the provider ended: not_sent or any answer; `probe` as claimed() said.
  Change record(bool not_sent, bool probe, UnixMillis now);

  State state() const { return state_; }
  int consecutive_not_sent() const { return consecutive_; }

private:
  Options options_;
  State state_ = State::closed;
  int consecutive_ = 0;
  bool probe_in_flight_ = false;
  UnixMillis next_probe_at_ = 0;
};

std::string_view to_string(Breaker::State s);

}  // namespace payorch
