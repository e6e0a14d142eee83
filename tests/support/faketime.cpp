#include "support/faketime.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "support/postgres_cluster.h"

namespace payorch::test {

std::optional<std::string> libfaketime_or_skip() {
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime",
                          "/usr/lib/faketime"}) {
    const std::string path = std::string(dir) + "/libfaketime.so.1";
    if (std::filesystem::exists(path)) return path;
  }
  if (in_ci()) FAIL("libfaketime.so.1 not found, and with CI set that fails the test (apt-get install faketime)");
  MESSAGE("faketime tests skipped: libfaketime.so.1 not found (apt-get install faketime)");
  return std::nullopt;
}

void shift_wall_clock(Daemon& daemon, const std::string& libfaketime, std::chrono::seconds offset) {
  daemon.set_env("LD_PRELOAD", libfaketime);
  // "+300": a relative offset in seconds from the real time, which goes on running.
  daemon.set_env("FAKETIME", (offset.count() >= 0 ? "+" : "") + std::to_string(offset.count()));
  daemon.set_env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
}

}  // namespace payorch::test
