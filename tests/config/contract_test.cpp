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

TEST_CASE("config: the risk cap and the breaker are read into core/risk.h's types, with its defaults") {
  const Config c =
      load_ok(edit(valid_yaml, "workers: 2", "workers: 2\n  breaker: {failures: 3, probe_interval: 250ms}"));
  const payorch::RiskCap cap = c.providers.at(0).risk;
  CHECK(cap.max_unknown_count == payorch::RiskCap{}.max_unknown_count);
  CHECK(cap.max_unknown_amount_minor == payorch::RiskCap{}.max_unknown_amount_minor);
  const payorch::Breaker::Options breaker = c.engine.breaker;
  CHECK(breaker.failures_to_open == 3);
  CHECK(breaker.probe_interval == 250ms);
  CHECK(load_ok(valid_yaml).engine.breaker.failures_to_open == payorch::Breaker::Options{}.failures_to_open);
}

}  // namespace payorch::config
