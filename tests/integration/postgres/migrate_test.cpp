// `payorchd migrate` with database.driver postgres, as processes: the schema applied once and
// reported without the password, the URI read from a systemd credential, and several daemons
// migrating one fresh database at once, each migration applied exactly once.
#include <doctest/doctest.h>

#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/migrations.h"
#include "support/daemon.h"
#include "support/postgres_cluster.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

DaemonConfig postgres_config(const std::string& database) {
  DaemonConfig config;
  config.database = database;
  return config;
}

DaemonConfig postgres_config_for(const PostgresDatabase& db) {
  return postgres_config("database: {driver: postgres, url: \"" + db.url() + "\", pool_size: 2}");
}

// "N migrations applied" from migrate's output; -1 when it does not say.
int applied_in(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex(R"(\((\d+) migrations applied\))"))) return -1;
  return std::stoi(m[1]);
}

int latest_version() { return store::pg::embedded_migrations().back().version; }

}  // namespace

TEST_CASE("payorchd migrate on PostgreSQL: applies the schema once, names the database without its password") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  Daemon daemon(postgres_config_for(*db));
  const CommandResult first = daemon.run_command({"migrate", "--config", daemon.config_path()});
  REQUIRE_MESSAGE(first.status.exited, first.output);
  CHECK_MESSAGE(first.status.code == 0, first.output);
  const std::string shown = store::pg::redacted_url(db->url());
  REQUIRE(shown != db->url());
  CHECK(first.output == shown + ": schema version " + std::to_string(latest_version()) + " (" +
                            std::to_string(store::pg::embedded_migrations().size()) +
                            " migrations applied)\n");
  const CommandResult second = daemon.run_command({"migrate", "--config", daemon.config_path()});
  CHECK_MESSAGE(second.status.code == 0, second.output);
  CHECK(applied_in(second.output) == 0);
  // The password is registered with log_audit: the Daemon's command logs are scanned for it.
}

TEST_CASE("payorchd migrate on PostgreSQL: the URI from a systemd credential (url_file)") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  Daemon daemon(postgres_config(
      "database:\n  driver: postgres\n  url_file: ${CREDENTIALS_DIRECTORY}/database-url"));
  write_file(daemon.dir() + "/credentials/database-url", db->url() + "\n");
  daemon.set_env("CREDENTIALS_DIRECTORY", daemon.dir() + "/credentials");
  const CommandResult r = daemon.run_command({"migrate", "--config", daemon.config_path()});
  CHECK_MESSAGE(r.status.code == 0, r.output);
  CHECK(applied_in(r.output) == static_cast<int>(store::pg::embedded_migrations().size()));
}

TEST_CASE("payorchd migrate on PostgreSQL: a database it cannot reach fails in one line, without the password") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  db->cluster().admin("ALTER DATABASE " + db->name() + " WITH ALLOW_CONNECTIONS false");
  Daemon daemon(postgres_config_for(*db));
  const CommandResult r = daemon.run_command({"migrate", "--config", daemon.config_path()});
  CHECK(r.status.exited);
  CHECK(r.status.code == 1);
  CHECK_MESSAGE(r.output.find("cannot connect to PostgreSQL at " +
                              store::pg::redacted_url(db->url())) != std::string::npos,
                r.output);
  CHECK(r.output.find("event=startup.failed") != std::string::npos);
}

TEST_CASE("payorchd migrate on PostgreSQL: daemons starting together apply each migration exactly once") {
  auto db = postgres_database_or_skip();
  if (!db) return;
  constexpr int daemons = 6;
  std::vector<std::unique_ptr<Daemon>> nodes;
  for (int i = 0; i < daemons; ++i) nodes.push_back(std::make_unique<Daemon>(postgres_config_for(*db)));
  std::vector<CommandResult> results(daemons);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < daemons; ++i)
      threads.emplace_back([&, i] {
        results[i] = nodes[i]->run_command({"migrate", "--config", nodes[i]->config_path()}, 60s);
      });
  }
  int applied = 0;
  for (const CommandResult& r : results) {
    CHECK_MESSAGE(r.status.exited, r.output);
    CHECK_MESSAGE(r.status.code == 0, r.output);
    CHECK_MESSAGE(applied_in(r.output) >= 0, r.output);
    applied += applied_in(r.output);
  }
  CHECK(applied == static_cast<int>(store::pg::embedded_migrations().size()));
  store::pg::Connection c(db->url());
  CHECK(c.exec("SELECT count(*) FROM schema_migrations").integer(0, 0) ==
        static_cast<std::int64_t>(store::pg::embedded_migrations().size()));
  CHECK(store::pg::schema_version(c) == latest_version());
}

}  // namespace payorch::test
