#pragma once
// Named fault-injection points for tests (crash and error loops). Armed only through the
// PAYORCH_FAILPOINTS environment variable, read once at start-up:
//   PAYORCH_FAILPOINTS="intake.before_commit=error:1;intake.after_commit=crash"
// Each entry is name=action[:times]; action `error` makes hit() return true (the caller fails the
// operation at that point), `crash` kills the process with SIGKILL right there, `term` sends the
// process SIGTERM and holds the caller for a second (so the drain has begun when it goes on;
// hit() returns false). `times` bounds how many hits trigger (default: all). Unarmed points cost
// one relaxed atomic load.
#include <string>
#include <string_view>

namespace payorch::failpoint {

// Parses the spec (normally the environment variable). Throws std::invalid_argument on a
// malformed spec, naming the entry.
void arm(std::string_view spec);
void arm_from_environment();
void disarm_all();

// True when the point is armed with `error` and has hits left. Never returns for `crash`.
bool hit(std::string_view name);

}  // namespace payorch::failpoint
