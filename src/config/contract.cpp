#include "config/contract.h"

namespace payorch::config {

payorch::Contract contract_of(const Provider& p, const Engine& e) {
  payorch::Contract c;
  c.key_retention = p.contract.key_retention;
  switch (p.contract.recovery) {
    case Recovery::lookup: c.recovery = RecoveryMode::lookup; break;
    case Recovery::replay: c.recovery = RecoveryMode::replay; break;
    case Recovery::none: c.recovery = RecoveryMode::none; break;
  }
  c.not_found_final_after = p.contract.not_found_final_after;
  c.max_attempts = p.retry.max_attempts;
  c.initial_backoff = p.retry.initial_backoff;
  c.max_backoff = p.retry.max_backoff;
  c.give_up_after = p.retry.give_up_after;
  c.request_timeout = p.timeouts.request;
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
