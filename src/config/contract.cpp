#include "config/contract.h"

namespace payorch::config {

payorch::Contract contract_of(const Provider& p, const Engine& e) {
  payorch::Contract c = p.contract;
  c.lease = e.lease;
  return c;
}

}  // namespace payorch::config
