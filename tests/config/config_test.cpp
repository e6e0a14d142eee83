// config.cpp: the sections it reads itself (server, database, retention, engine, admin, tenants
// and their webhooks, routing), the top level of the file, load() and parse_duration — every rule
// of docs/contract.md §7 with a test asserting the line and key path of its message.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>

#include "config/config.h"
#include "config/config_fixture.h"
#include "support/process.h"

namespace payorch::config {

using namespace payorch::test;
using namespace std::chrono_literals;

TEST_CASE("config: the example conf/payorchd.yaml loads") {
  const Config c = load(std::string(PAYORCH_SOURCE_DIR) + "/conf/payorchd.yaml");
  CHECK(c.server.listen_host == "127.0.0.1");
  CHECK(c.server.listen_port == 8080);
  CHECK(c.database.driver == "sqlite");
  CHECK(c.database.path == "var/payorch.db");
  CHECK(c.admin_token.size() >= 8);
  REQUIRE(c.tenants.size() == 1);
  CHECK(c.tenants[0].id == "demo");
  CHECK(c.tenants[0].token == "demo-token");
  CHECK_FALSE(c.tenants[0].webhook.has_value());
  REQUIRE(c.providers.size() == 1);
  const Provider& p = c.providers[0];
  CHECK(p.name == "sim");
  CHECK(p.adapter == "sim");
  CHECK(p.base_url == "http://127.0.0.1:8090");
  CHECK(p.api_key == "sim-demo-key");
  CHECK(p.contract.key_retention == 24h);
  CHECK(p.contract.recovery == RecoveryMode::lookup);
  CHECK(p.contract.not_found_final_after == Millis{30s});
  CHECK(p.callback.secret == "sim-callback-secret");
  CHECK(c.default_provider == "sim");
}

TEST_CASE("config: every value of a full configuration is read") {
  const Config c = load_ok(valid_yaml);
  CHECK(c.source_path == "test.yaml");
  CHECK(c.server.listen_port == 0);
  CHECK(c.server.max_body_bytes == 65536);
  CHECK(c.database.path == "test.db");
  CHECK(c.retention.callback_inbox == 24h * 30);
  CHECK(c.retention.delivered_events == 24h * 7);
  CHECK(c.engine.workers == 2);
  CHECK(c.engine.lease == 30s);
  CHECK(c.engine.poll_interval == 500ms);
  CHECK(c.engine.breaker.failures_to_open == 5);  // defaults: engine.breaker is optional
  CHECK(c.engine.breaker.probe_interval == 1s);
  CHECK(c.admin_token == "admin-token-0001");
  REQUIRE(c.tenants.size() == 1);
  REQUIRE(c.tenants[0].webhook.has_value());
  CHECK(c.tenants[0].webhook->url == "https://hooks.acme.test/payorch");
  CHECK(c.tenants[0].webhook->secret == "acme-webhook-secret");
  const Provider& p = c.providers.at(0);
  CHECK(p.base_url == "http://127.0.0.1:8090");  // trailing slash removed
  CHECK(p.timeouts.connect == 2s);
  CHECK(p.contract.request_timeout == 10s);
  CHECK(p.contract.max_attempts == 10);
  CHECK(p.contract.initial_backoff == 1s);
  CHECK(p.contract.max_backoff == 1min);
  CHECK(p.contract.give_up_after == 1h);
  CHECK(p.risk.max_unknown_count == 100);
  CHECK(p.risk.max_unknown_amount_minor == 10'000'000);
  CHECK(p.callback.tolerance == 5min);
  CHECK(p.callback.retry_horizon == 24h);
}

TEST_CASE("config: optional sections take their defaults; flow style works") {
  const std::string yaml = R"(server: {listen: "[::1]:8443"}
admin: {token: "admin-token-0001"}
tenants:
  - {id: acme, token: "acme-token-0001"}
providers:
  - name: sim
    adapter: sim
    base_url: "http://127.0.0.1:9"
    api_key: "sim-key-1234"
    contract: {key_retention: 24h, recovery: lookup}
    callback: {secret: "sim-callback-secret"}
)";
  const Config c = load_ok(yaml);
  const Config defaults;
  CHECK(c.server.listen_host == "::1");
  CHECK(c.server.listen_port == 8443);
  CHECK(c.server.max_body_bytes == defaults.server.max_body_bytes);
  CHECK(c.database.path == defaults.database.path);
  CHECK(c.engine.lease == defaults.engine.lease);
  CHECK_FALSE(c.providers.at(0).contract.not_found_final_after.has_value());  // never
  CHECK(c.providers.at(0).contract.max_attempts == payorch::Contract{}.max_attempts);
  CHECK(c.default_provider == "sim");  // the only provider
  CHECK_FALSE(c.tenants.at(0).webhook.has_value());
}

TEST_CASE("config: parse_duration") {
  struct Row {
    std::string_view text;
    std::optional<Millis> want;
  };
  const Row rows[] = {
      {"250ms", 250ms}, {"2s", 2s},          {"5m", 5min},      {"24h", 24h},
      {"7d", 24h * 7},  {"1ms", 1ms},        {"007s", 7s},      {"3650d", max_duration},
      {"0s", {}},       {"0ms", {}},         {"1.5s", {}},      {"-2s", {}},
      {"+2s", {}},      {"2", {}},           {"2 s", {}},       {" 2s", {}},
      {"2s ", {}},      {"2sec", {}},        {"2S", {}},        {"s", {}},
      {"", {}},         {"never", {}},       {"2h30m", {}},     {"3651d", {}},
      {"9223372036854775807ms", {}},         {"99999999999999999999999s", {}},
      {"1e3ms", {}},    {"0x10s", {}},
  };
  for (const Row& row : rows) {
    CAPTURE(row.text);
    CHECK(parse_duration(row.text) == row.want);
  }
}

TEST_CASE("config: tenant ids") {
  const std::string long_id = "id: " + std::string(65, 'a');
  check_edits({
      {"id: acme", "id: Acme", "id: Acme",
       "tenants[0].id: tenant ids are 1-64 characters of [a-z0-9_-]"},
      {"id: acme", long_id, "id: aaa", "tenants[0].id: tenant ids are 1-64"},
  });
  CHECK(errors_of(edit(valid_yaml, "id: acme", "id: " + std::string(64, 'a'))).empty());
}

TEST_CASE("config: tokens are unique across tenants and the admin") {
  const std::string tenant2 = "  - id: globex\n    token: acme-token-0001\n";
  check_error(edit(valid_yaml, "providers:\n", tenant2 + "providers:\n"),
              "token: acme-token-0001\nproviders",
              "tenants[1].token: the same token is already used by tenants[0] (acme)");
  check_error(edit(valid_yaml, "token: acme-token-0001", "token: admin-token-0001"),
              "token: admin-token-0001\n    webhook",
              "tenants[0].token: the same token is already used by admin");
  // The message never shows the token.
  for (const std::string& e :
       errors_of(edit(valid_yaml, "token: acme-token-0001", "token: admin-token-0001")))
    CHECK(e.find("admin-token-0001") == std::string::npos);
}

TEST_CASE("config: tokens need at least 8 printable characters") {
  check_edits({
      {"token: acme-token-0001", "token: short", "token: short",
       "tenants[0].token: too short: a token needs at least 8 characters"},
      {"token: admin-token-0001", "token: \"admin token 0001\"", "admin token",
       "admin.token: must be printable ASCII without spaces"},
  });
  CHECK(errors_of(edit(valid_yaml, "token: acme-token-0001", "token: 12345678")).empty());
}

TEST_CASE("config: listen") {
  struct Row {
    std::string_view listen;
    bool ok;
  };
  const Row rows[] = {
      {"127.0.0.1:8080", true},  {"0.0.0.0:0", true},      {"[::1]:8080", true},
      {"[::]:65535", true},      {"localhost:8080", false}, {"127.0.0.1", false},
      {"127.0.0.1:", false},     {"127.0.0.1:65536", false}, {"127.0.0.1:-1", false},
      {"::1:8080", false},       {"[::1]8080", false},      {"[127.0.0.1]:80", false},
      {"1.2.3:80", false},       {":8080", false},          {"127.0.0.1:80x", false},
  };
  for (const Row& row : rows) {
    CAPTURE(row.listen);
    const std::string yaml =
        edit(valid_yaml, "listen: 127.0.0.1:0", "listen: \"" + std::string(row.listen) + "\"");
    if (row.ok) CHECK(errors_of(yaml).empty());
    else check_error(yaml, "listen:", "server.listen: expected HOST:PORT");
  }
}

TEST_CASE("config: values outside their set (database, webhooks)") {
  check_edits({
      {"driver: sqlite", "driver: mysql", "driver:",
       "database.driver: unsupported driver \"mysql\"; expected sqlite or postgres"},
      {"url: https://hooks.acme.test/payorch", "url: hooks.acme.test", "url: hooks",
       "tenants[0].webhook.url: expected an http:// or https:// URL"},
      {"url: https://hooks.acme.test/payorch", "url: \"https://\"", "url: \"https",
       "tenants[0].webhook.url: expected an http:// or https:// URL"},
  });
}

TEST_CASE("config: numeric bounds (engine, server)") {
  check_edits({
      {"workers: 2", "workers: 0", "workers", "engine.workers: must be at least 1"},
      {"workers: 2", "node_id: Node.A\n  workers: 2", "node_id",
       "engine.node_id: node ids are 1-64 characters of [a-z0-9_-], got \"Node.A\""},
      {"workers: 2", "workers: 2\n  breaker: {failures: 0}", "breaker",
       "engine.breaker.failures: must be at least 1"},
      {"workers: 2", "workers: 2\n  breaker: {probe_interval: 0s}", "breaker",
       "engine.breaker.probe_interval"},
      {"workers: 2", "workers: 2\n  breaker: {failure: 3}", "breaker",
       "engine.breaker.failure: unknown key 'failure' (did you mean 'failures'?)"},
      {"max_body_bytes: 65536", "max_body_bytes: 0", "max_body_bytes",
       "server.max_body_bytes: must be at least 1"},
  });
  const auto breaker = load_from_string(
      edit(valid_yaml, "workers: 2", "workers: 2\n  breaker: {failures: 3, probe_interval: 250ms}"), "t.yaml");
  CHECK(breaker.engine.breaker.failures_to_open == 3);
  CHECK(breaker.engine.node_id.empty());  // the host name's (daemon::node_id)
  CHECK(load_from_string(edit(valid_yaml, "workers: 2", "node_id: pay-eu-1\n  workers: 2"), "t.yaml").engine.node_id ==
        "pay-eu-1");
  CHECK(breaker.engine.breaker.probe_interval == 250ms);
}

TEST_CASE("config: routing.default_provider") {
  check_error(edit(valid_yaml, "default_provider: sim", "default_provider: stripe"),
              "default_provider",
              "routing.default_provider: no provider is named \"stripe\" (configured: sim)");
  const std::string two = with_second_provider(valid_yaml);
  CHECK(load_ok(edit(two, "default_provider: sim", "default_provider: other")).default_provider ==
        "other");
  check_error(edit(two, "routing:\n  default_provider: sim\n", ""), "providers:",
              "routing.default_provider: missing required key: needed when more than one provider");
  CHECK(load_ok(edit(valid_yaml, "routing:\n  default_provider: sim\n", "")).default_provider ==
        "sim");
}

TEST_CASE("config: YAML syntax errors carry their line") {
  check_error("server:\n  listen: 127.0.0.1:0\n bad: indent\n", "", "YAML syntax error", 3);
  check_error("server: [1, 2\n", "", "YAML syntax error", 2);
  check_error("", "", "(top level): the file has no settings", 1);
  check_error("- a\n- b\n", "", "(top level): expected a mapping", 1);
  const std::string two_documents = valid_yaml + "---\nserver: {}\n";
  check_error(two_documents, "server: {}", "(top level): only one YAML document");
}

TEST_CASE("config: webhook timeout and backoff") {
  const Webhook defaults = load_ok(valid_yaml).tenants.at(0).webhook.value();
  CHECK(defaults.timeout == 10s);
  CHECK(defaults.initial_backoff == 1s);
  CHECK(defaults.max_backoff == 5min);

  const std::string tuned =
      edit(valid_yaml, "      secret: acme-webhook-secret\n",
           "      secret: acme-webhook-secret\n      timeout: 3s\n      initial_backoff: 250ms\n"
           "      max_backoff: 1m\n");
  const Webhook w = load_ok(tuned).tenants.at(0).webhook.value();
  CHECK(w.timeout == 3s);
  CHECK(w.initial_backoff == 250ms);
  CHECK(w.max_backoff == 1min);

  check_error(edit(tuned, "timeout: 3s", "timeout: 0s"), "timeout: 0s",
              "tenants[0].webhook.timeout: expected a duration");
  check_error(edit(tuned, "initial_backoff: 250ms", "initial_backoff: 2m"), "initial_backoff: 2m",
              "tenants[0].webhook.initial_backoff: initial_backoff (2m) must not exceed "
              "max_backoff (1m)");
  // Against the default max_backoff (5m); line 22 is the one after the secret.
  check_error(edit(valid_yaml, "      secret: acme-webhook-secret\n",
                   "      secret: acme-webhook-secret\n      initial_backoff: 10m\n"),
              "", "tenants[0].webhook.initial_backoff: initial_backoff (10m) must not exceed "
                  "max_backoff (5m)", 22);
  check_error(edit(valid_yaml, "      secret: acme-webhook-secret\n",
                   "      secret: acme-webhook-secret\n      retries: 3\n"),
              "retries: 3",
              "tenants[0].webhook.retries: unknown key 'retries'; expected one of: url secret "
              "secret_file timeout initial_backoff max_backoff");
}

TEST_CASE("config: a webhook url needs a host") {
  for (const char* url : {"http://hooks.acme.test", "https://hooks.acme.test:8443/in?x=1",
                          "http://127.0.0.1:9000/hooks", "http://[::1]:9000/hooks"}) {
    CAPTURE(url);
    CHECK(errors_of(edit(valid_yaml, "url: https://hooks.acme.test/payorch",
                         "url: \"" + std::string(url) + "\""))
              .empty());
  }
  for (const char* url : {"http://:8080/hooks", "https://user:pw@hooks.acme.test/",
                          "https://hooks.acme.test:0/", "https://hooks.acme.test:99999/",
                          "https://hooks.acme.test:/x", "https://hooks.acme.test/#frag",
                          "http://[::1/hooks", "ftp://hooks.acme.test/"}) {
    CAPTURE(url);
    check_error(edit(valid_yaml, "url: https://hooks.acme.test/payorch",
                     "url: \"" + std::string(url) + "\""),
                "", "tenants[0].webhook.url: expected an http:// or https:// URL with a host", 20);
  }
}

TEST_CASE("config: the callback inbox outlives every provider's callback retry_horizon") {
  // Equal is enough: a repeat within the horizon still finds its inbox row.
  CHECK(errors_of(edit(valid_yaml, "callback_inbox: 30d", "callback_inbox: 24h")).empty());
  check_error(edit(valid_yaml, "callback_inbox: 30d", "callback_inbox: 12h"), "",
              "retention.callback_inbox: 12h is shorter than provider sim's callback.retry_horizon "
              "(1d): a callback the vendor repeats after its inbox row was purged would be "
              "taken for a new one",
              8);
  // The longest horizon is the one named.
  const std::string two = edit(
      edit(with_second_provider(valid_yaml), "callback: {secret: other-callback-secret}",
           "callback: {secret: other-callback-secret, retry_horizon: 48h}"),
      "callback_inbox: 30d", "callback_inbox: 36h");
  check_error(two, "callback_inbox: 36h",
              "retention.callback_inbox: 1d12h is shorter than provider other's "
              "callback.retry_horizon (2d)");
  CHECK(errors_of(two).size() == 1);

  // No retention section: the default 30d applies, and the horizon's own line is named.
  const std::string no_retention =
      edit(edit(valid_yaml, "retention:\n  callback_inbox: 30d\n  delivered_events: 7d\n", ""),
           "retry_horizon: 24h", "retry_horizon: 40d");
  check_error(no_retention, "",
              "providers[0].callback.retry_horizon: 40d (provider sim) is longer than "
              "retention.callback_inbox (30d, the default)",
              42);
  CHECK(errors_of(edit(no_retention, "retry_horizon: 40d", "retry_horizon: 30d")).empty());
  // A retention section without callback_inbox: the same.
  check_error(edit(edit(valid_yaml, "  callback_inbox: 30d\n", ""), "retry_horizon: 24h",
                   "retry_horizon: 31d"),
              "retry_horizon: 31d",
              "providers[0].callback.retry_horizon: 31d (provider sim) is longer than "
              "retention.callback_inbox (30d, the default)");

  // A bad value is reported once, not again by this check.
  CHECK(errors_of(edit(valid_yaml, "callback_inbox: 30d", "callback_inbox: soon")).size() == 1);
  CHECK(errors_of(edit(edit(valid_yaml, "callback_inbox: 30d", "callback_inbox: 12h"),
                       "retry_horizon: 24h", "retry_horizon: tomorrow"))
            .size() == 1);
}

TEST_CASE("config: load() of a missing file") {
  TempDir dir("payorch-config");
  CHECK_THROWS_WITH_AS(load(dir.path() + "/nope.yaml"),
                       doctest::Contains("nope.yaml: cannot read the configuration: No such file"),
                       ConfigError);
}

TEST_CASE("config: find_provider") {
  const Config c = load_ok(edit(with_second_provider(valid_yaml), "default_provider: sim",
                                "default_provider: other"));
  REQUIRE(c.find_provider("other") != nullptr);
  CHECK(c.find_provider("other")->contract.recovery == RecoveryMode::replay);
  CHECK(c.find_provider("sim") == &c.providers[0]);
  CHECK(c.find_provider("nope") == nullptr);
}

TEST_CASE("config: conf/payorchd.production.yaml loads with its credentials") {
  const std::string path = std::string(PAYORCH_SOURCE_DIR) + "/conf/payorchd.production.yaml";
  TempDir dir("payorch-config");
  // Named as the unit's LoadCredential=payorch:/etc/payorch/credentials names its copies.
  for (const char* name : {"admin.token", "tenant-shop.token", "tenant-shop.webhook-secret",
                           "provider-sim.api-key", "provider-sim.callback-secret"})
    dir.write(std::string("payorch_") + name, std::string(name) + "-value\n");
  {
    const ScopedEnv env("CREDENTIALS_DIRECTORY", dir.path());
    const Config c = load(path);
    CHECK(c.database.path == "/var/lib/payorch/payorch.db");
    CHECK(c.admin_token == "admin.token-value");
    REQUIRE(c.tenants.size() == 1);
    CHECK(c.tenants[0].token == "tenant-shop.token-value");
    CHECK(c.tenants[0].webhook->secret == "tenant-shop.webhook-secret-value");
    REQUIRE(c.providers.size() == 1);
    CHECK(c.providers[0].api_key == "provider-sim.api-key-value");
    CHECK(c.providers[0].callback.secret == "provider-sim.callback-secret-value");
  }
  // Without the credentials it names every line that needs one.
  const ScopedEnv env("CREDENTIALS_DIRECTORY", std::nullopt);
  try {
    load(path);
    FAIL("loaded without $CREDENTIALS_DIRECTORY");
  } catch (const ConfigError& e) {
    const std::string text = e.what();
    CHECK(std::count(text.begin(), text.end(), '\n') == 4);
    CHECK(text.find("admin.token_file: ${CREDENTIALS_DIRECTORY} is not set") != std::string::npos);
  }
}

TEST_CASE("config: server connection limits") {
  const Config defaults = load_ok(valid_yaml);
  CHECK(defaults.server.max_connections == 1024);
  CHECK(defaults.server.reserved_connections == 8);
  CHECK(defaults.server.max_connections_per_client == 256);

  const Config set = load_ok(edit(valid_yaml, "max_body_bytes: 65536",
                                  "max_body_bytes: 65536\n  max_connections: 100\n"
                                  "  reserved_connections: 10\n  max_connections_per_client: 20"));
  CHECK(set.server.max_connections == 100);
  CHECK(set.server.reserved_connections == 10);
  CHECK(set.server.max_connections_per_client == 20);
  // Left out, the reserve fits under a small max_connections.
  CHECK(load_ok(edit(valid_yaml, "max_body_bytes: 65536", "max_body_bytes: 65536\n  max_connections: 4"))
            .server.reserved_connections == 3);

  check_edits({
      {"max_body_bytes: 65536", "max_body_bytes: 65536\n  max_connections: 8\n  reserved_connections: 8",
       "reserved_connections", "server.reserved_connections: must be less than server.max_connections (8), got 8"},
      {"max_body_bytes: 65536", "max_body_bytes: 65536\n  reserved_connections: -1", "reserved_connections",
       "server.reserved_connections: must be at least 0, got -1"},
      {"max_body_bytes: 65536", "max_body_bytes: 65536\n  max_connections_per_client: 0",
       "max_connections_per_client", "server.max_connections_per_client: must be at least 1, got 0"},
      {"max_body_bytes: 65536", "max_body_bytes: 65536\n  max_connection_per_client: 5",
       "max_connection_per_client", "server.max_connection_per_client: unknown key"},
  });
}

}  // namespace payorch::config

// --- database.driver postgres -----------------------------------------------------------------

namespace payorch::config {
namespace {

const std::string pg_url = "postgresql://payorch:pg-secret-pw@db.internal:5432/payorch";

// valid_yaml on PostgreSQL: `lines` replace the database section's keys, two spaces in.
std::string with_postgres(const std::string& lines) {
  return edit(valid_yaml, "  driver: sqlite\n  path: test.db\n", "  driver: postgres\n" + lines);
}

}  // namespace

TEST_CASE("config: database.driver postgres takes url and pool_size") {
  const Config c = load_ok(with_postgres("  url: " + pg_url + "\n  pool_size: 16\n"));
  CHECK(c.database.driver == "postgres");
  CHECK(c.database.url == pg_url);
  CHECK(c.database.url_file.empty());
  CHECK(c.database.pool_size == 16);
  CHECK(load_ok(with_postgres("  url: " + pg_url + "\n")).database.pool_size == Database{}.pool_size);
  CHECK(load_ok(with_postgres("  url: postgres://u@h/d?sslmode=require\n")).database.url ==
        "postgres://u@h/d?sslmode=require");
}

TEST_CASE("config: postgres group commit: max_batch up to 64, write_connections up to the pool") {
  const Config defaults = load_ok(with_postgres("  url: " + pg_url + "\n  pool_size: 10\n"));
  CHECK(defaults.database.max_batch == max_postgres_batch);
  CHECK(defaults.database.write_connections == 0);
  CHECK(write_connections_of(defaults.database) == 5);
  const Config set = load_ok(with_postgres("  url: " + pg_url +
                                           "\n  pool_size: 10\n  max_batch: 16\n  write_connections: 3\n"));
  CHECK(set.database.max_batch == 16);
  CHECK(write_connections_of(set.database) == 3);
  Database one;
  one.pool_size = 1;
  CHECK(write_connections_of(one) == 1);
  check_error(with_postgres("  url: " + pg_url + "\n  max_batch: 65\n"), "max_batch:",
              "database.max_batch: must be at most 64");
  check_error(with_postgres("  url: " + pg_url + "\n  pool_size: 4\n  write_connections: 5\n"),
              "write_connections:", "database.write_connections: must be at most 4");
  check_error(with_postgres("  url: " + pg_url + "\n  write_connections: 0\n"), "write_connections:",
              "database.write_connections: must be at least 1, got 0");
}

TEST_CASE("config: database.url_file is read when the configuration loads, from a credential too") {
  TempDir dir("payorch-config");
  dir.write("secrets/database-url", pg_url + "\n");
  const std::string yaml = with_postgres("  url_file: secrets/database-url\n");
  const Config relative = load_ok(yaml, dir.path() + "/payorchd.yaml");
  CHECK(relative.database.url == pg_url);  // the trailing newline is not part of it
  CHECK(relative.database.url_file == "secrets/database-url");

  const ScopedEnv env("CREDENTIALS_DIRECTORY", dir.path() + "/secrets");
  const Config credential =
      load_ok(with_postgres("  url_file: ${CREDENTIALS_DIRECTORY}/database-url\n"));
  CHECK(credential.database.url == pg_url);
  CHECK(credential.database.url_file == "${CREDENTIALS_DIRECTORY}/database-url");
}

TEST_CASE("config: database errors name their line, and never quote the URI") {
  const std::string both = with_postgres("  url: " + pg_url + "\n  url_file: /run/db-url\n");
  check_error(both, "url_file:", "database.url_file: give either url or url_file, not both");
  check_error(with_postgres("  pool_size: 4\n"), "database:",
              "database.url: missing required key (or url_file)");
  check_error(with_postgres("  url_file: /nonexistent/db-url\n"), "url_file:",
              "database.url_file: cannot read /nonexistent/db-url");
  const std::string not_uri = with_postgres("  url: \"host=db password=pg-secret-pw\"\n");
  check_error(not_uri, "url:", "database.url: expected a libpq connection URI");
  check_error(with_postgres("  url: " + pg_url + "\n  pool_size: 0\n"), "pool_size:",
              "database.pool_size: must be at least 1, got 0");
  check_error(with_postgres("  url: " + pg_url + "\n  pool_size: " +
                            std::to_string(max_pool_size + 1) + "\n"),
              "pool_size:", "database.pool_size: must be at most " + std::to_string(max_pool_size));
  // Each driver refuses the other's settings rather than ignoring them.
  check_error(with_postgres("  url: " + pg_url + "\n  path: test.db\n"), "path:",
              "database.path: applies to driver sqlite only (database.driver is postgres)");
  check_error(with_postgres("  url: " + pg_url + "\n  busy_retries: 8\n"), "busy_retries:",
              "database.busy_retries: applies to driver sqlite only");
  check_error(edit(valid_yaml, "path: test.db", "path: test.db\n  url: " + pg_url), "url:",
              "database.url: applies to driver postgres only (database.driver is sqlite)");
  check_error(edit(valid_yaml, "path: test.db", "path: test.db\n  pool_size: 4"), "pool_size:",
              "database.pool_size: applies to driver postgres only");
  check_error(edit(valid_yaml, "path: test.db", "path: test.db\n  write_connections: 2"),
              "write_connections:", "database.write_connections: applies to driver postgres only");
  for (const std::string& yaml : {both, not_uri})
    for (const std::string& e : errors_of(yaml)) CHECK(e.find("pg-secret-pw") == std::string::npos);
}

}  // namespace payorch::config
