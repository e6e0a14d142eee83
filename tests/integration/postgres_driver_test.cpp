// database.driver postgres before the store seam exists (docs/postgres.md): `serve` and
// `check-exposure` refuse at once with a message that says so, before touching any database.
#include <doctest/doctest.h>

#include <string>

#include "support/daemon.h"
#include "support/ports.h"

namespace payorch::test {

TEST_CASE("driver postgres: serve and check-exposure refuse: PostgreSQL serving is not built yet") {
  // Nothing listens there: a daemon that tried to connect would say so instead.
  const RefusingPort nobody;
  DaemonConfig config;
  config.database = "database: {driver: postgres, url: \"postgresql://payorch:not-a-real-pw@127.0.0.1:" +
                    std::to_string(nobody.port()) + "/payorch\"}";
  Daemon daemon(config);
  const ExitStatus serve = daemon.start_expecting_exit();
  CHECK(serve.exited);
  CHECK(serve.code == 1);
  const std::string log = daemon.log_tail();
  CHECK_MESSAGE(log.find("event=database.postgres_not_built") != std::string::npos, log);
  CHECK(log.find("payorchd serve on PostgreSQL (database.driver: postgres) is not built yet") !=
        std::string::npos);
  CHECK(log.find("cannot connect") == std::string::npos);
  CHECK(log.find("not-a-real-pw") == std::string::npos);

  const CommandResult check = daemon.run_command({"check-exposure", "--config", daemon.config_path()});
  CHECK(check.status.code == 1);
  CHECK_MESSAGE(check.output.find("payorchd check-exposure on PostgreSQL") != std::string::npos,
                check.output);
  // The configuration itself is valid.
  const CommandResult valid = daemon.run_command({"check-config", "--config", daemon.config_path()});
  CHECK_MESSAGE(valid.status.code == 0, valid.output);
}

}  // namespace payorch::test
