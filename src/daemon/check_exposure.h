#pragma once
#include "config/config.h"

namespace payorch::daemon {

// `payorchd check-exposure`: reads the kept exposure and a recount from the payments in one read
// transaction (a WAL snapshot: consistent even while the daemon writes), prints every difference
// on stdout and returns 1 when there is one; otherwise prints the kept figures and returns 0.
int check_exposure(const config::Config& cfg);

}  // namespace payorch::daemon
