#pragma once
#include "config/config.h"

namespace payorch::daemon {

// `payorchd check-exposure`: reads the kept exposure and a recount from the payments in one read
// transaction (a WAL snapshot on SQLite, a REPEATABLE READ one on PostgreSQL: consistent even
// while daemons write), prints every difference on stdout and returns 1 when there is
// one; otherwise prints the kept figures and returns 0.
int check_exposure(const config::Config& cfg);

}  // namespace payorch::daemon
