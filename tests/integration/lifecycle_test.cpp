// Operating payorchd (docs/contract.md §7): SIGTERM drains and exits 0 with the data intact; check-config
// names the bad line; a database migrated by a newer payorchd is refused at startup.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// 1-based line of the first occurrence of `needle` in `text`, 0 if absent.
int line_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

// True when `output` cites line `line` ("file:12:", "line 12", "12:5").
bool cites_line(const std::string& output, int line) {
  const std::string n = std::to_string(line);
  return std::regex_search(output, std::regex("(:" + n + "[:\\s,)]|line " + n + "\\b)"));
}

}  // namespace

TEST_CASE("lifecycle: SIGTERM exits 0 and the data survives a restart") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  CHECK(http_request(daemon.port(), "GET", "/healthz").status == 200);
  CHECK(http_request(daemon.port(), "GET", "/readyz").status == 200);

  std::vector<PaymentRequest> requests;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    requests.push_back({.operation_id = "term-" + std::to_string(i),
                        .amount_minor = 500 + i,
                        .currency = "GBP",
                        .payee = "payee-term",
                        .source = "tok_decline"});
    const HttpResponse r = post_payment(daemon.port(), acme_token, requests.back());
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    ids.push_back(json_string(r.json(), "id"));
  }

  // An idle keep-alive connection must not hold up the drain.
  HttpConnection idle(daemon.port());
  REQUIRE(idle.request("GET", "/healthz").status == 200);

  const ExitStatus stopped = daemon.terminate(10s);
  CHECK_MESSAGE((stopped.exited && stopped.code == 0), stopped.describe());

  {
    DatabaseProbe db(daemon);
    CHECK(db.integrity_check() == "ok");
    CHECK(db.count("SELECT count(*) FROM payments") == 3);
  }

  daemon.restart();
  CHECK(http_request(daemon.port(), "GET", "/readyz").status == 200);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const HttpResponse found = get_payment(daemon.port(), acme_token, requests[i].operation_id);
    REQUIRE_MESSAGE(found.status == 200, found.describe());
    CHECK(view_mismatch(found.json(), requests[i], "") == "");
    CHECK(json_string(found.json(), "id") == ids[i]);
    const HttpResponse replay = post_payment(daemon.port(), acme_token, requests[i]);
    CHECK_MESSAGE(replay.status == 200, replay.describe());
    CHECK(json_string(replay.json(), "id") == ids[i]);
  }
  const ExitStatus again = daemon.terminate(10s);
  CHECK_MESSAGE((again.exited && again.code == 0), again.describe());
}

TEST_CASE("lifecycle: check-config exits non-zero and names the line of a bad value"
          * doctest::test_suite("driver-free")) {
  DaemonConfig bad;
  bad.engine = "engine: {workers: 2, lease: 30 parsecs, poll_interval: 500ms}";
  Daemon daemon(bad);
  const std::string text = read_file(daemon.config_path());
  const int line = line_of(text, "30 parsecs");
  REQUIRE(line > 1);

  const CommandResult result =
      daemon.run_command({"check-config", "--config", daemon.config_path()});
  INFO("check-config output:\n" << result.output);
  CHECK_MESSAGE((result.status.exited && result.status.code != 0), result.status.describe());
  CHECK(cites_line(result.output, line));
  CHECK(result.output.find("lease") != std::string::npos);

  // Control: the default config passes.
  Daemon good;
  const CommandResult ok = good.run_command({"check-config", "--config", good.config_path()});
  INFO("check-config output (good config):\n" << ok.output);
  CHECK_MESSAGE((ok.status.exited && ok.status.code == 0), ok.status.describe());
  // Secrets are never printed.
  CHECK(ok.output.find("acme-token-123") == std::string::npos);
  CHECK(ok.output.find("sim-key-1234") == std::string::npos);
}

TEST_CASE("lifecycle: check-config refuses a retry window longer than the vendor keeps keys"
          * doctest::test_suite("driver-free")) {
  // give_up_after + request timeout + lease > 0.9 x key_retention with a resubmitting contract:
  // a late retry after the vendor forgot the key would charge twice (docs/contract.md §5).
  DaemonConfig risky;
  const std::string marker =
      "retry: {max_attempts: 5, initial_backoff: 1s, max_backoff: 30s, give_up_after: 1h}";
  const std::size_t at = risky.providers.find(marker);
  REQUIRE(at != std::string::npos);
  risky.providers.replace(
      at, marker.size(),
      "retry: {max_attempts: 5, initial_backoff: 1s, max_backoff: 30s, give_up_after: 23h}");
  Daemon daemon(risky);
  const CommandResult result =
      daemon.run_command({"check-config", "--config", daemon.config_path()});
  INFO("check-config output:\n" << result.output);
  CHECK_MESSAGE((result.status.exited && result.status.code != 0), result.status.describe());
  CHECK(result.output.find("retention") != std::string::npos);
}

TEST_CASE("lifecycle: serve refuses a database migrated by a newer payorchd"
          * doctest::test_suite("sqlite-only")) {
  Daemon daemon;
  const CommandResult migrated = daemon.run_command({"migrate", "--config", daemon.config_path()});
  INFO("migrate output:\n" << migrated.output);
  REQUIRE_MESSAGE((migrated.status.exited && migrated.status.code == 0),
                  migrated.status.describe());
  // Migrating twice is a no-op.
  const CommandResult again = daemon.run_command({"migrate", "--config", daemon.config_path()});
  CHECK_MESSAGE((again.status.exited && again.status.code == 0), again.output);

  // Control: this database serves.
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  REQUIRE(
      post_payment(daemon.port(), acme_token, PaymentRequest{.operation_id = "pre-999"}).status ==
      201);
  const ExitStatus stopped = daemon.terminate(10s);
  REQUIRE_MESSAGE(stopped.exited, stopped.describe());

  {
    // Pretend a newer payorchd applied migration 999: copy the newest row, version replaced.
    DatabaseProbe db(daemon, SqliteProbe::Mode::for_writing);
    const auto columns = db.query("SELECT name FROM pragma_table_info('schema_migrations')");
    REQUIRE_MESSAGE(!columns.empty(), "no schema_migrations table");
    std::string names, values;
    for (const SqlRow& c : columns) {
      const std::string name = c.at("name").value_or("");
      names += (names.empty() ? "" : ", ") + name;
      values += (values.empty() ? "" : ", ") + (name == "version" ? std::string("999") : name);
    }
    REQUIRE_MESSAGE(names.find("version") != std::string::npos, "columns: " << names);
    db.exec("INSERT INTO schema_migrations (" + names + ") SELECT " + values +
            " FROM schema_migrations ORDER BY version DESC LIMIT 1");
    REQUIRE(db.count("SELECT max(version) FROM schema_migrations") == 999);
  }

  const ExitStatus refused = daemon.start_expecting_exit(10s);
  CHECK_MESSAGE((refused.exited && refused.code != 0), refused.describe());
  const std::string log = daemon.log_tail(2000);
  const std::size_t marker = log.rfind("==== harness");
  REQUIRE(marker != std::string::npos);
  const std::string last_start = log.substr(log.find('\n', marker) + 1);
  CHECK_MESSAGE(last_start.find("999") != std::string::npos, last_start);

  // The refusal touched nothing.
  DatabaseProbe db(daemon);
  CHECK(db.count("SELECT count(*) FROM payments") == 1);
  CHECK(db.integrity_check() == "ok");
}

TEST_CASE("lifecycle: a replay answers 200 with the stored payment after its provider left the config") {
  DaemonConfig config;
  // A second provider, "legacy", beside sim.
  const std::string sim_block = config.providers.substr(config.providers.find("  - name: sim"));
  std::string legacy_block = sim_block;
  legacy_block.replace(legacy_block.find("name: sim"), 9, "name: legacy");
  config.providers += "\n" + legacy_block;
  Daemon daemon(config);
  daemon.start();
  const PaymentRequest req{.operation_id = unique_operation_id("legacy"), .provider = "legacy"};
  const HttpResponse created = post_payment(daemon.port(), acme_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  daemon.kill9();

  // The operator removes the provider; the stored payment keeps naming it.
  DaemonConfig without_legacy;
  without_legacy.database = daemon.database_section();
  std::ofstream(daemon.config_path()) << without_legacy.render(daemon.dir());
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const HttpResponse replay = post_payment(daemon.port(), acme_token, req);
  CHECK_MESSAGE(replay.status == 200, replay.describe());
  CHECK(json_string(replay.json(), "id") == json_string(created.json(), "id"));
  CHECK(json_string(replay.json(), "provider") == "legacy");
  CHECK(replay.header("Idempotent-Replayed") == "true");

  // A new intent naming it is refused, and nothing is stored.
  const PaymentRequest fresh{.operation_id = unique_operation_id("legacy-new"), .provider = "legacy"};
  const HttpResponse refused = post_payment(daemon.port(), acme_token, fresh);
  CHECK_MESSAGE(refused.status == 422, refused.describe());
  CHECK(refused.body.find("unknown_provider") != std::string::npos);
  CHECK(get_payment(daemon.port(), acme_token, fresh.operation_id).status == 404);
}
