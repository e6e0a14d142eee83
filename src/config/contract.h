#pragma once
// A configured provider's contract as the core (core/decide.h) takes it. Its risk cap and the
// breaker settings are core/risk.h's own types (Provider::risk, Engine::breaker).
#include "config/config.h"
#include "core/decide.h"

namespace payorch::config {

// p.contract under engine `e`'s lease (for a loaded configuration, p.contract itself).
payorch::Contract contract_of(const Provider& p, const Engine& e);

}  // namespace payorch::config
