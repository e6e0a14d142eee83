// database.driver postgres with a server that cannot be reached: `serve` and `check-exposure`
// fail at start with a message that names the server, never the URI's password, and exit 1
// (systemd restarts serve). Serving itself is tested against a real cluster in
// tests/integration/postgres/serve_test.cpp.
#include <doctest/doctest.h>

#include <string>

#include "support/daemon.h"
#include "support/ports.h"

namespace payorch::test {

TEST_CASE("driver postgres: serve and check-exposure fail at start when the server cannot be reached") {
  // Nothing listens there.
  const RefusingPort nobody;
  DaemonConfig config;
  const std::string where = "127.0.0.1:" + std::to_string(nobody.port()) + "/payorch";
  config.database = "database: {driver: postgres, url: \"postgresql://payorch:not-a-real-pw@" + where + "\"}";
  Daemon daemon(config);
  const ExitStatus serve = daemon.start_expecting_exit();
  CHECK(serve.exited);
  CHECK(serve.code == 1);
  const std::string log = daemon.log_tail();
  CHECK_MESSAGE(log.find("event=startup.failed") != std::string::npos, log);
  CHECK_MESSAGE(log.find("payorch:****@" + where) != std::string::npos, log);
  CHECK(log.find("not-a-real-pw") == std::string::npos);

  const CommandResult check = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  CHECK(check.status.code == 1);
  CHECK_MESSAGE(check.output.find("payorch:****@" + where) != std::string::npos, check.output);
  CHECK(check.output.find("not-a-real-pw") == std::string::npos);
  // The configuration itself is valid.
  const CommandResult valid = daemon.run_command({"check-config", "--config", daemon.config_path()});
  CHECK_MESSAGE(valid.status.code == 0, valid.output);
}

}  // namespace payorch::test
