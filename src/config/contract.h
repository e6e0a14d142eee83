#pragma once
// A configured provider's contract as the decisions (core/decide.h) see it: the vendor's
// promises plus the local timings that bound how long a call can stay on the wire.
#include "config/config.h"
#include "core/decide.h"
#include "core/risk.h"

namespace payorch::config {

payorch::Contract contract_of(const Provider& p, const Engine& e);
payorch::RiskCap risk_cap_of(const Provider& p);
payorch::Breaker::Options breaker_options_of(const Engine& e);

}  // namespace payorch::config
