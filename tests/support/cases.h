#pragma once
// Reconciliation cases for tests of the admin API: a payment of the tenant acme and a case
// opened on it directly in the daemon's database.
#include <string>

#include "support/daemon.h"

namespace payorch::test {

struct Created {
  std::string id;
  std::string client_key;
};

// A 42.00 EUR payment of acme, answered 201 (the test fails otherwise).
Created create_payment(Daemon& daemon, const std::string& prefix);

// Opens a case the way the engine's give_up does: the payment's automatic work stops (and the
// fence moves, so a worker holding a lease can no longer write) and the case row appears,
// in one transaction. `n` makes the case id, unique per daemon.
std::string open_case(Daemon& daemon, const std::string& payment_id, int n);

}  // namespace payorch::test
