#include <doctest/doctest.h>

#include "core/risk.h"
#include "support/enum_names.h"

using namespace payorch;

TEST_CASE("risk caps: intake pauses at or over a cap; a submit waits if it would take exposure over one") {
  const RiskCap cap{3, 1'000};
  CHECK_FALSE(at_risk_cap(cap, {2, 999}));
  CHECK(at_risk_cap(cap, {3, 0}));
  CHECK(at_risk_cap(cap, {0, 1'000}));

  // Count: exactly the cap, never one more.
  CHECK_FALSE(would_exceed_risk_cap(cap, {2, 0}, 1));
  CHECK(would_exceed_risk_cap(cap, {3, 0}, 1));
  // Amount: "would this one take it over", not "is it over already".
  CHECK_FALSE(would_exceed_risk_cap(cap, {1, 600}, 400));
  CHECK(would_exceed_risk_cap(cap, {1, 600}, 401));
  // A payment above the amount cap on its own goes only when nothing of its currency is
  // exposed (or it would wait for ever); never beside other exposure.
  CHECK_FALSE(would_exceed_risk_cap(cap, {0, 0}, 5'000));
  CHECK(would_exceed_risk_cap(cap, {1, 1}, 5'000));
  CHECK(would_exceed_risk_cap(cap, {3, 0}, 5'000));  // the count cap still holds
  // Caps of 0: nothing may be exposed, so nothing is sent and intake stays paused.
  CHECK(would_exceed_risk_cap(RiskCap{0, 1'000}, {0, 0}, 1));
  CHECK(would_exceed_risk_cap(RiskCap{5, 0}, {0, 0}, 1));
  CHECK(at_risk_cap(RiskCap{5, 0}, {0, 0}));
  // Amounts up to 2^53 − 1 cannot overflow the comparison.
  const std::int64_t max_amount = 9'007'199'254'740'991;
  CHECK(would_exceed_risk_cap(RiskCap{10, max_amount}, {1, max_amount}, max_amount));
}

TEST_CASE("breaker: opens after consecutive not-sent calls, probes one at a time, closes on an answer") {
  Breaker b({.failures_to_open = 3, .probe_interval = Millis(1'000)});
  UnixMillis now = 10'000;
  CHECK(b.state() == Breaker::State::closed);
  CHECK(b.allowance(50, now) == 50);

  // An answer in between resets the run: only consecutive failures count.
  CHECK(b.record(true, false, now) == Breaker::Change::none);
  CHECK(b.record(true, false, now) == Breaker::Change::none);
  CHECK(b.record(false, false, now) == Breaker::Change::none);
  CHECK(b.record(true, false, now) == Breaker::Change::none);
  CHECK(b.record(true, false, now) == Breaker::Change::none);
  CHECK(b.record(true, false, now) == Breaker::Change::opened);
  CHECK(b.state() == Breaker::State::open);

  // Open: nothing until probe_interval has passed, then exactly one probe.
  CHECK(b.allowance(50, now) == 0);
  CHECK(b.allowance(50, now + 999) == 0);
  now += 1'000;
  CHECK(b.allowance(50, now) == 1);
  CHECK(b.claimed(1, now));
  CHECK(b.allowance(50, now + 5'000) == 0);  // the probe is still out
  // Calls sent before it opened fail too: they neither close it nor free the probe slot.
  CHECK(b.record(true, false, now + 10) == Breaker::Change::none);
  CHECK(b.allowance(50, now + 5'000) == 0);
  // The probe fails: the next one waits for probe_interval from the last probe's claim.
  CHECK(b.record(true, true, now + 200) == Breaker::Change::none);
  CHECK(b.allowance(50, now + 999) == 0);
  CHECK(b.allowance(50, now + 1'000) == 1);

  // Any answer (the vendor was reached) closes it: every slot is free again.
  now += 1'000;
  CHECK(b.claimed(1, now));
  CHECK(b.record(false, true, now + 20) == Breaker::Change::closed);
  CHECK(b.state() == Breaker::State::closed);
  CHECK(b.allowance(50, now + 20) == 50);
  CHECK_FALSE(b.claimed(50, now + 20));  // closed: no probes
  CHECK(b.allowance(0, now) == 0);
}

TEST_CASE("breaker: every state has a name") {
  test::check_names({Breaker::State::closed, Breaker::State::open});
}
