// reader.cpp: how any key is read and reported — types, unknown and repeated keys, required keys
// and lists, durations, secrets and the files they come from (${CREDENTIALS_DIRECTORY}), and
// every error in file order, each on its line.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/config_fixture.h"
#include "support/process.h"

namespace payorch::config {

using namespace payorch::test;

namespace {

// valid_yaml with every secret read from $CREDENTIALS_DIRECTORY.
std::string with_credentials(const std::string& yaml) {
  std::string out = edit(yaml, "token: admin-token-0001",
                         "token_file: ${CREDENTIALS_DIRECTORY}/admin.token");
  out = edit(out, "token: acme-token-0001", "token_file: ${CREDENTIALS_DIRECTORY}/acme.token");
  out = edit(out, "secret: acme-webhook-secret",
             "secret_file: \"${CREDENTIALS_DIRECTORY}/acme.webhook\"");
  out = edit(out, "api_key: sim-api-key-0001", "api_key_file: ${CREDENTIALS_DIRECTORY}/sim.key");
  return edit(out, "secret: sim-callback-secret",
              "secret_file: ${CREDENTIALS_DIRECTORY}/sim.callback");
}

void write_credentials(const TempDir& dir) {
  dir.write("creds/admin.token", "admin-from-cred-01\n");
  dir.write("creds/acme.token", "acme-from-cred-01\n");
  dir.write("creds/acme.webhook", "acme-webhook-from-cred");
  dir.write("creds/sim.key", "sim-key-from-cred\n");
  dir.write("creds/sim.callback", "sim-callback-from-cred\n");
}

}  // namespace

TEST_CASE("config: a bad duration names its line and key") {
  check_edits({
      {"lease: 30s", "lease: 1.5s", "lease", "engine.lease: expected a duration"},
      {"connect: 2s", "connect: 2", "connect", "providers[0].timeouts.connect: expected a duration"},
      {"poll_interval: 500ms", "poll_interval: {a: 1}", "poll_interval",
       "engine.poll_interval: expected a duration, got a mapping"},
      {"not_found_final_after: 30s", "not_found_final_after: soon", "not_found_final_after",
       "providers[0].contract.not_found_final_after: expected a duration"},
  });
}

TEST_CASE("config: not_found_final_after accepts never") {
  const Config c =
      load_ok(edit(valid_yaml, "not_found_final_after: 30s", "not_found_final_after: never"));
  CHECK_FALSE(c.providers.at(0).contract.not_found_final_after.has_value());
}

TEST_CASE("config: unknown keys are errors, with a suggestion for typos") {
  check_edits({
      {"engine:\n", "engin:\n", "engin:", "engin: unknown key 'engin' (did you mean 'engine'?)"},
      {"give_up_after: 1h", "give_up_afterr: 1h", "give_up_afterr",
       "providers[0].retry.give_up_afterr: unknown key"},
      {"    webhook:\n", "    colour: blue\n    webhook:\n", "colour",
       "tenants[0].colour: unknown key 'colour'; expected one of: id token token_file webhook"},
  });
}

TEST_CASE("config: a repeated key is an error") {
  const std::string yaml = edit(valid_yaml, "  max_body_bytes: 65536\n",
                                "  max_body_bytes: 65536\n  listen: 127.0.0.1:1\n");
  check_error(yaml, "listen: 127.0.0.1:1", "server.listen: duplicate key (first given at line 2)");
}

TEST_CASE("config: wrong types") {
  check_edits({
      // A mapping where a scalar is expected.
      {"path: test.db", "path:\n    nested: 1", "path:",
       "database.path: expected a string, got a mapping"},
      // A string where an integer is expected, quoted or not.
      {"workers: 2", "workers: two", "workers", "engine.workers: expected an integer, got \"two\""},
      {"workers: 2", "workers: \"2\"", "workers", "engine.workers: expected an integer"},
      {"max_attempts: 10", "max_attempts: 2.5", "max_attempts",
       "providers[0].retry.max_attempts: expected an integer"},
      // A list where a mapping is expected, a mapping where a list is expected.
      {"engine:\n  workers: 2\n  lease: 30s\n  poll_interval: 500ms\n", "engine: [1, 2]\n",
       "engine:", "engine: expected a mapping, got a list"},
      {"  - id: acme", "  - acme\n  - id: acme", "- acme",
       "tenants[0]: expected a mapping, got a scalar"},
      // Nothing where a value is needed.
      {"adapter: sim", "adapter:", "adapter:", "providers[0].adapter: expected a string, got nothing"},
      {"path: test.db", "path: \"\"", "path:", "database.path: must not be empty"},
  });
  const std::size_t tenants = valid_yaml.find("tenants:");
  const std::string tenant_block =
      valid_yaml.substr(tenants, valid_yaml.find("providers:") - tenants);
  check_error(edit(valid_yaml, tenant_block, "tenants: {id: acme}\n"), "tenants:",
              "tenants: expected a list, got a mapping");
}

TEST_CASE("config: required keys") {
  check_edits({
      {"  listen: 127.0.0.1:0\n", "", "server:", "server.listen: missing required key"},
      {"  token: admin-token-0001\n", "", "admin:", "admin: is empty; expected a mapping"},
      {"  token: admin-token-0001\n", "  {}\n", "admin:",
       "admin.token: missing required key (or token_file)"},
      {"    adapter: sim\n", "", "- name: sim", "providers[0].adapter: missing required key"},
      {"      key_retention: 24h\n", "", "contract:",
       "providers[0].contract.key_retention: missing required key"},
      {"      recovery: lookup\n", "", "contract:",
       "providers[0].contract.recovery: missing required key"},
      {"      secret: sim-callback-secret\n", "", "callback:",
       "providers[0].callback.secret: missing required key (or secret_file)"},
      {"      secret: acme-webhook-secret\n", "", "webhook:",
       "tenants[0].webhook.secret: missing required key (or secret_file)"},
  });
  check_error(edit(valid_yaml, "admin:\n  token: admin-token-0001\n", ""), "",
              "admin: missing required key", 1);
}

TEST_CASE("config: at least one tenant and one provider") {
  const std::size_t tenants = valid_yaml.find("tenants:");
  const std::size_t providers = valid_yaml.find("providers:");
  const std::size_t routing = valid_yaml.find("routing:");
  const std::string no_tenants = valid_yaml.substr(0, tenants) + valid_yaml.substr(providers);
  check_error(no_tenants, "", "tenants: missing required key", 1);
  check_error(edit(valid_yaml, valid_yaml.substr(tenants, providers - tenants), "tenants: []\n"),
              "tenants: []", "tenants: at least one tenant is required");
  const std::string no_providers = valid_yaml.substr(0, providers);
  check_error(no_providers, "", "providers: missing required key", 1);
  check_error(edit(valid_yaml, valid_yaml.substr(providers, routing - providers), "providers:\n"),
              "providers:", "providers: at least one provider is required");
}

TEST_CASE("config: duplicate tenant ids and provider names") {
  const std::string tenant2 = "  - id: acme\n    token: other-token-01\n";
  check_error(edit(valid_yaml, "providers:\n", tenant2 + "providers:\n"),
              "  - id: acme\n    token: other",
              "tenants[1].id: duplicate tenant id \"acme\" (first given as tenants[0])");
  const std::string yaml = edit(with_second_provider(valid_yaml), "name: other", "name: sim");
  check_error(yaml, "  - name: sim\n    adapter: sim\n    base_url: https",
              "providers[1].name: duplicate provider name \"sim\"");
}

TEST_CASE("config: secrets from files, relative to the config file's folder") {
  TempDir dir("payorch-config");
  dir.write("etc/secrets/admin.token", "admin-from-file-01\n\n");
  dir.write("etc/acme.token", "acme-from-file-01 \r\n");
  dir.write("etc/sim.key", "sim-key-from-file");
  const std::string absolute = dir.write("elsewhere/sim.secret", "callback-from-file\n");
  std::string yaml = edit(valid_yaml, "token: admin-token-0001", "token_file: secrets/admin.token");
  yaml = edit(yaml, "token: acme-token-0001", "token_file: ./acme.token");
  yaml = edit(yaml, "api_key: sim-api-key-0001", "api_key_file: sim.key");
  yaml = edit(yaml, "secret: sim-callback-secret", "secret_file: " + absolute);
  const Config c = load(dir.write("etc/payorch.yaml", yaml));
  CHECK(c.admin_token == "admin-from-file-01");
  CHECK(c.tenants.at(0).token == "acme-from-file-01");
  CHECK(c.providers.at(0).api_key == "sim-key-from-file");
  CHECK(c.providers.at(0).callback.secret == "callback-from-file");
}

TEST_CASE("config: a secret file that cannot be read") {
  TempDir dir("payorch-config");
  dir.write("empty.token", " \n");
  std::string yaml = edit(valid_yaml, "token: admin-token-0001", "token_file: missing.token");
  yaml = edit(yaml, "token: acme-token-0001", "token_file: empty.token");
  yaml = edit(yaml, "secret: acme-webhook-secret", "secret_file: .");
  const std::string path = dir.write("payorch.yaml", yaml);
  // `path` names the file in messages and is where relative *_file paths start.
  const std::vector<std::string> errors = errors_of(yaml, path);
  REQUIRE_MESSAGE(errors.size() == 3, joined(errors));
  const auto at = [&](std::string_view needle) { return line_prefix(path, yaml, needle); };
  CHECK_MESSAGE(has_error(errors, at("missing.token"),
                          "admin.token_file: cannot read " + dir.path() +
                              "/missing.token: No such file or directory"),
                joined(errors));
  CHECK_MESSAGE(has_error(errors, at("empty.token"),
                          "tenants[0].token_file: " + dir.path() + "/empty.token is empty"),
                joined(errors));
  CHECK_MESSAGE(has_error(errors, at("secret_file: ."),
                          "tenants[0].webhook.secret_file: cannot read " + dir.path()),
                joined(errors));
  CHECK_MESSAGE(has_error(errors, at("secret_file: ."), ": Is a directory"), joined(errors));
}

TEST_CASE("config: a secret file that is a device or too large") {
  TempDir dir("payorch-config");
  dir.write("huge.token", std::string((1 << 20) + 1, 'x'));
  std::string yaml = edit(valid_yaml, "token: admin-token-0001", "token_file: /dev/zero");
  yaml = edit(yaml, "token: acme-token-0001", "token_file: huge.token");
  const std::string path = dir.write("payorch.yaml", yaml);
  const std::vector<std::string> errors = errors_of(yaml, path);
  REQUIRE_MESSAGE(errors.size() == 2, joined(errors));
  const auto at = [&](std::string_view needle) { return line_prefix(path, yaml, needle); };
  CHECK_MESSAGE(has_error(errors, at("/dev/zero"), "admin.token_file: cannot read /dev/zero: not a regular file"),
                joined(errors));
  CHECK_MESSAGE(has_error(errors, at("huge.token"), "huge.token: larger than 1 MiB"), joined(errors));
}

TEST_CASE("config: token and token_file together") {
  check_edits({
      {"  token: admin-token-0001\n", "  token: admin-token-0001\n  token_file: admin.token\n",
       "token_file", "admin.token_file: give either token or token_file, not both"},
      {"    api_key: sim-api-key-0001\n",
       "    api_key: sim-api-key-0001\n    api_key_file: sim.key\n", "api_key_file",
       "providers[0].api_key_file: give either api_key or api_key_file, not both"},
  });
}

TEST_CASE("config: every error is reported, in file order") {
  std::string yaml = edit(valid_yaml, "lease: 30s", "lease: soon");
  yaml = edit(yaml, "token: acme-token-0001", "token: short");
  yaml = edit(yaml, "max_attempts: 10", "max_attempts: 0");
  yaml = edit(yaml, "driver: sqlite", "drivr: sqlite");
  const std::vector<std::string> errors = errors_of(yaml);
  REQUIRE_MESSAGE(errors.size() == 4, joined(errors));
  CHECK(errors[0].starts_with("test.yaml:" + std::to_string(line_of(yaml, "drivr")) +
                              ":3: database.drivr:"));
  CHECK(errors[1].starts_with("test.yaml:" + std::to_string(line_of(yaml, "soon")) +
                              ":10: engine.lease:"));
  CHECK(errors[2].starts_with("test.yaml:" + std::to_string(line_of(yaml, "short")) +
                              ":12: tenants[0].token:"));
  CHECK(errors[3].starts_with("test.yaml:" + std::to_string(line_of(yaml, "max_attempts")) +
                              ":21: providers[0].retry.max_attempts:"));
}

TEST_CASE("config: *_file paths read systemd credentials from ${CREDENTIALS_DIRECTORY}") {
  TempDir dir("payorch-config");
  write_credentials(dir);
  const ScopedEnv env("CREDENTIALS_DIRECTORY", dir.path() + "/creds");
  const Config c = load_ok(with_credentials(valid_yaml));
  CHECK(c.admin_token == "admin-from-cred-01");
  CHECK(c.tenants.at(0).token == "acme-from-cred-01");
  CHECK(c.tenants.at(0).webhook->secret == "acme-webhook-from-cred");
  CHECK(c.providers.at(0).api_key == "sim-key-from-cred");
  CHECK(c.providers.at(0).callback.secret == "sim-callback-from-cred");

  // A missing credential names the expanded path.
  const std::string yaml = edit(with_credentials(valid_yaml), "/admin.token", "/nope.token");
  check_error(yaml, "nope.token",
              "admin.token_file: cannot read " + dir.path() +
                  "/creds/nope.token: No such file or directory");
}

TEST_CASE("config: ${CREDENTIALS_DIRECTORY} unset, empty or misspelt is a line-numbered error") {
  const std::string yaml = with_credentials(valid_yaml);
  for (const std::optional<std::string>& value :
       {std::optional<std::string>{}, std::optional<std::string>("")}) {
    CAPTURE(value.has_value());
    const ScopedEnv env("CREDENTIALS_DIRECTORY", value);
    const std::vector<std::string> errors = errors_of(yaml);
    CHECK_MESSAGE(errors.size() == 5, joined(errors));
    for (const auto& [needle, key] :
         {std::pair{"/admin.token", "admin.token_file"}, {"/acme.token", "tenants[0].token_file"},
          {"/acme.webhook", "tenants[0].webhook.secret_file"},
          {"/sim.key", "providers[0].api_key_file"},
          {"/sim.callback", "providers[0].callback.secret_file"}})
      check_error(yaml, needle, std::string(key) + ": ${CREDENTIALS_DIRECTORY} is not set");
  }

  const ScopedEnv env("CREDENTIALS_DIRECTORY", "/run/credentials/payorchd.service");
  check_edits({
      {"token: admin-token-0001", "token_file: ${CREDENTIAL_DIRECTORY}/admin.token", "admin.token",
       "admin.token_file: ${CREDENTIAL_DIRECTORY} is not expanded; a file path may only use "
       "${CREDENTIALS_DIRECTORY}"},
      {"api_key: sim-api-key-0001", "api_key_file: ${HOME}/sim.key", "sim.key",
       "providers[0].api_key_file: ${HOME} is not expanded"},
      {"token: acme-token-0001", "token_file: ${CREDENTIALS_DIRECTORY/acme.token", "acme.token",
       "tenants[0].token_file: unterminated ${ in \"${CREDENTIALS_DIRECTORY/acme.token\""},
  });
}

}  // namespace payorch::config
