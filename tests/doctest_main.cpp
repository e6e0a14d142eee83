#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "support/log_audit.h"

// doctest's own main, plus the log audit: every Daemon's logs were scanned for registered
// secrets when it was destroyed (tests/support/log_audit.h). Checking after the run, rather
// than in a last test case, holds whatever order or subset of tests ran.
int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int status = context.run();
  if (context.shouldExit()) return status;
  return payorch::test::log_audit::report(status);
}
