#pragma once
// libfaketime (Debian package faketime): a daemon whose own wall clock is off, for the tests of
// time across nodes (docs/postgres.md, "Time across nodes"). LD_PRELOAD shifts what the process
// reads from the wall clock (clock_gettime(CLOCK_REALTIME), gettimeofday, time); the monotonic
// clock is left alone (FAKETIME_DONT_FAKE_MONOTONIC=1), as an NTP-less machine's would be: it
// measures durations right, only its wall clock is off.
#include <chrono>
#include <optional>
#include <string>

#include "support/daemon.h"

namespace payorch::test {

// The path of libfaketime.so.1. When it is not installed: with CI set the calling test case
// FAILs (tools/deps and .ci/run install faketime); otherwise nullopt after a MESSAGE saying so.
// In a sanitizer build always nullopt, after a MESSAGE (libfaketime can deadlock there).
std::optional<std::string> libfaketime_or_skip();

// From its next start on, `daemon`'s wall clock runs `offset` ahead of the machine's (behind
// when negative), through `libfaketime`.
void shift_wall_clock(Daemon& daemon, const std::string& libfaketime, std::chrono::seconds offset);

}  // namespace payorch::test
