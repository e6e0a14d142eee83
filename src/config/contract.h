#pragma once
// A configured provider's contract, risk cap and breaker as the core (core/decide.h,
// core/risk.h) takes them.
#include "config/config.h"
#include "core/decide.h"
#include "core/risk.h"

namespace payorch::config {

// p.contract under engine `e`'s lease (for a loaded configuration, p.contract itself).
payorch::Contract contract_of(const Provider& p, const Engine& e);
payorch::RiskCap risk_cap_of(const Provider& p);
payorch::Breaker::Options breaker_options_of(const Engine& e);

}  // namespace payorch::config
