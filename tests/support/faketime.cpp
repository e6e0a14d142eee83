#include "support/faketime.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "support/postgres_cluster.h"

namespace payorch::test {

namespace {

// Whether this is a sanitizer build (clang's and gcc's own macros).
constexpr bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace

std::optional<std::string> libfaketime_or_skip() {
  // libfaketime and the sanitizers' runtimes both hook the clock and the allocator, and their
  // start-up can deadlock: a sanitized payorchd under LD_PRELOAD=libfaketime sometimes hangs
  // before main after "libfaketime: Unexpected recursive calls to clock_gettime() without proper
  // initialization" (https://github.com/wolfcw/libfaketime/issues/365). The plain build, which
  // every test run has, runs these tests; the sanitized trees leave them out, saying so.
  if (sanitized()) {
    MESSAGE("faketime tests left out of sanitizer builds: libfaketime can deadlock with the "
            "sanitizer runtime at start (they run in the plain build)");
    return std::nullopt;
  }
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
