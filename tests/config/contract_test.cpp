// contract.cpp: a configured provider as the core takes it — its contract under the engine's
// lease, its risk cap, and the engine's breaker options.
#include "config/contract.h"

#include <doctest/doctest.h>

#include "config/config_fixture.h"

namespace payorch::config {

using namespace payorch::test;
using namespace std::chrono_literals;

TEST_CASE("config: contract_of carries the provider's contract under the engine's lease") {
  const Config c = load_ok(valid_yaml);
  const Provider& p = c.providers.at(0);
  const payorch::Contract contract = contract_of(p, c.engine);
  CHECK(contract.key_retention == 24h);
  CHECK(contract.recovery == RecoveryMode::lookup);
  CHECK(contract.not_found_final_after == Millis{30s});
  CHECK(contract.max_attempts == 10);
  CHECK(contract.give_up_after == 1h);
  CHECK(contract.request_timeout == 10s);
  CHECK(contract.lease == 30s);
  Engine engine = c.engine;
  engine.lease = 45s;
  CHECK(contract_of(p, engine).lease == 45s);
}

TEST_CASE("config: risk_cap_of and breaker_options_of") {
  const Config c =
      load_ok(edit(valid_yaml, "workers: 2", "workers: 2\n  breaker: {failures: 3, probe_interval: 250ms}"));
  const payorch::RiskCap cap = risk_cap_of(c.providers.at(0));
  CHECK(cap.max_count == 100);
  CHECK(cap.max_amount_minor == 10'000'000);
  const payorch::Breaker::Options breaker = breaker_options_of(c.engine);
  CHECK(breaker.failures_to_open == 3);
  CHECK(breaker.probe_interval == 250ms);
}

}  // namespace payorch::config
