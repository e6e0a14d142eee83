#include "config/contract.h"

namespace payorch::config {

payorch::Contract contract_of(const Provider& p, const Engine& e) {
  payorch::Contract c = p.contract;
  c.lease = e.lease;
  return c;
}

payorch::RiskCap risk_cap_of(const Provider& p) {
  return {p.risk.max_unknown_count, p.risk.max_unknown_amount_minor};
}

payorch::Breaker::Options breaker_options_of(const Engine& e) {
  return {e.breaker.failures, e.breaker.probe_interval};
}

}  // namespace payorch::config
