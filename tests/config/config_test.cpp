// The configuration loader: every rule of docs/contract.md §7 (and the startup safety checks of §3/§5) has
// a test asserting the line and key path of its message.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "config/config.h"
#include "support/test_cert.h"

namespace payorch::config {
namespace {

using namespace std::chrono_literals;

// A complete, valid configuration. Tests change it one line at a time with edit().
const std::string valid_yaml = R"(server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
database:
  driver: sqlite
  path: test.db
retention:
  callback_inbox: 30d
  delivered_events: 7d
engine:
  workers: 2
  lease: 30s
  poll_interval: 500ms
admin:
  token: admin-token-0001
tenants:
  - id: acme
    token: acme-token-0001
    webhook:
      url: https://hooks.acme.test/payorch
      secret: acme-webhook-secret
providers:
  - name: sim
    adapter: sim
    base_url: http://127.0.0.1:8090/
    api_key: sim-api-key-0001
    timeouts:
      connect: 2s
      request: 10s
    contract:
      key_retention: 24h
      recovery: lookup
      not_found_final_after: 30s
    retry:
      max_attempts: 10
      initial_backoff: 1s
      max_backoff: 1m
      give_up_after: 1h
    risk:
      max_unknown_count: 100
      max_unknown_amount_minor: 10000000
    callback:
      secret: sim-callback-secret
      tolerance: 5m
      retry_horizon: 24h
routing:
  default_provider: sim
)";

const std::string second_provider = R"(  - name: other
    adapter: sim
    base_url: https://other.test
    api_key: other-api-key-01
    contract: {key_retention: 7d, recovery: replay}
    callback: {secret: other-callback-secret}
)";

// `yaml` with the only occurrence of `from` replaced by `to`.
std::string edit(std::string yaml, std::string_view from, std::string_view to) {
  const std::size_t at = yaml.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "not in the YAML: " << from);
  REQUIRE_MESSAGE(yaml.find(from, at + 1) == std::string::npos, "ambiguous edit: " << from);
  yaml.replace(at, from.size(), to);
  return yaml;
}

std::string with_second_provider(const std::string& yaml) {
  return edit(yaml, "routing:\n", second_provider + "routing:\n");
}

// 1-based number of the first line containing `needle`.
int line_of(const std::string& yaml, std::string_view needle) {
  const std::size_t at = yaml.find(needle);
  REQUIRE_MESSAGE(at != std::string::npos, "not in the YAML: " << needle);
  return 1 + static_cast<int>(std::count(yaml.begin(), yaml.begin() + static_cast<long>(at), '\n'));
}

// What load_from_string() threw, one entry per line; empty when it loaded.
std::vector<std::string> errors_of(const std::string& yaml, const std::string& name = "test.yaml") {
  std::vector<std::string> lines;
  try {
    load_from_string(yaml, name);
  } catch (const ConfigError& e) {
    std::string_view text = e.what();
    while (!text.empty()) {
      const std::size_t nl = text.find('\n');
      lines.emplace_back(text.substr(0, nl));
      text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    }
  }
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// Whether one of `errors` starts with `prefix` ("FILE:LINE:") and contains `message`.
bool has_error(const std::vector<std::string>& errors, const std::string& prefix,
               std::string_view message) {
  return std::any_of(errors.begin(), errors.end(), [&](const std::string& e) {
    return e.starts_with(prefix) && e.find(message) != std::string::npos;
  });
}

// Loading `yaml` fails with an error on the line containing `needle` (or on `line` if given)
// whose text contains `message` (which starts with the key path).
void check_error(const std::string& yaml, std::string_view needle, std::string_view message,
                 int line = 0) {
  const std::vector<std::string> errors = errors_of(yaml);
  const std::string prefix =
      "test.yaml:" + std::to_string(line ? line : line_of(yaml, needle)) + ":";
  CHECK_MESSAGE(has_error(errors, prefix, message),
                "expected \"" << prefix << " ... " << message << "\" among:\n" << joined(errors));
}

// One change to valid_yaml and the error it must cause on the line containing `needle`.
struct BadEdit {
  std::string_view from;
  std::string_view to;
  std::string_view needle;
  std::string_view message;
};

void check_edits(std::initializer_list<BadEdit> cases) {
  for (const BadEdit& c : cases) {
    CAPTURE(c.to);
    check_error(edit(valid_yaml, c.from, c.to), c.needle, c.message);
  }
}

Config load_ok(const std::string& yaml, const std::string& name = "test.yaml") {
  const std::vector<std::string> errors = errors_of(yaml, name);
  REQUIRE_MESSAGE(errors.empty(), joined(errors));
  return load_from_string(yaml, name);
}

// A fresh directory for *_file cases, removed afterwards.
class TempDir {
public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "payorch-config-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string write(const std::string& name, const std::string& contents) const {
    const std::filesystem::path p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << contents;
    return p.string();
  }
  std::string path() const { return path_.string(); }

private:
  std::filesystem::path path_;
};

}  // namespace

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
  CHECK(c.engine.breaker.failures == 5);  // defaults: engine.breaker is optional
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

TEST_CASE("config: tenant ids and provider names") {
  const std::string long_id = "id: " + std::string(65, 'a');
  check_edits({
      {"id: acme", "id: Acme", "id: Acme",
       "tenants[0].id: tenant ids are 1-64 characters of [a-z0-9_-]"},
      {"id: acme", long_id, "id: aaa", "tenants[0].id: tenant ids are 1-64"},
      {"- name: sim", "- name: my sim", "name: my sim",
       "providers[0].name: provider names are 1-64 characters of [a-z0-9_-]"},
  });
  CHECK(errors_of(edit(valid_yaml, "id: acme", "id: " + std::string(64, 'a'))).empty());
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

TEST_CASE("config: secrets from files, relative to the config file's folder") {
  TempDir dir;
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
  TempDir dir;
  dir.write("empty.token", " \n");
  std::string yaml = edit(valid_yaml, "token: admin-token-0001", "token_file: missing.token");
  yaml = edit(yaml, "token: acme-token-0001", "token_file: empty.token");
  yaml = edit(yaml, "secret: acme-webhook-secret", "secret_file: .");
  const std::string path = dir.write("payorch.yaml", yaml);
  // `path` names the file in messages and is where relative *_file paths start.
  const std::vector<std::string> errors = errors_of(yaml, path);
  REQUIRE_MESSAGE(errors.size() == 3, joined(errors));
  const auto at = [&](std::string_view needle) {
    return path + ":" + std::to_string(line_of(yaml, needle)) + ":";
  };
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
  TempDir dir;
  dir.write("huge.token", std::string((1 << 20) + 1, 'x'));
  std::string yaml = edit(valid_yaml, "token: admin-token-0001", "token_file: /dev/zero");
  yaml = edit(yaml, "token: acme-token-0001", "token_file: huge.token");
  const std::string path = dir.write("payorch.yaml", yaml);
  const std::vector<std::string> errors = errors_of(yaml, path);
  REQUIRE_MESSAGE(errors.size() == 2, joined(errors));
  const auto at = [&](std::string_view needle) {
    return path + ":" + std::to_string(line_of(yaml, needle)) + ":";
  };
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



TEST_CASE("config: values outside their set") {
  check_edits({
      {"driver: sqlite", "driver: mysql", "driver:",
       "database.driver: unsupported driver \"mysql\"; expected sqlite or postgres"},
      {"adapter: sim", "adapter: stripe", "adapter:",
       "providers[0].adapter: unknown adapter \"stripe\"; known adapters: sim"},
      {"recovery: lookup", "recovery: query", "recovery:",
       "providers[0].contract.recovery: expected lookup, replay or none, got \"query\""},
      {"base_url: http://127.0.0.1:8090/", "base_url: ftp://vendor.test", "base_url:",
       "providers[0].base_url: expected an http:// or https:// URL"},
      {"base_url: http://127.0.0.1:8090/", "base_url: 127.0.0.1:8090", "base_url:",
       "providers[0].base_url: expected an http:// or https:// URL"},
      {"base_url: http://127.0.0.1:8090/", "base_url: http://vendor.test/?a=1", "base_url:",
       "providers[0].base_url: expected an http:// or https:// URL without query"},
      {"url: https://hooks.acme.test/payorch", "url: hooks.acme.test", "url: hooks",
       "tenants[0].webhook.url: expected an http:// or https:// URL"},
      {"url: https://hooks.acme.test/payorch", "url: \"https://\"", "url: \"https",
       "tenants[0].webhook.url: expected an http:// or https:// URL"},
  });
}

TEST_CASE("config: numeric bounds") {
  check_edits({
      {"max_attempts: 10", "max_attempts: 0", "max_attempts",
       "providers[0].retry.max_attempts: must be at least 1, got 0"},
      {"initial_backoff: 1s", "initial_backoff: 2m", "initial_backoff",
       "providers[0].retry.initial_backoff: initial_backoff (2m) must not exceed max_backoff (1m)"},
      {"max_unknown_count: 100", "max_unknown_count: -1", "max_unknown_count",
       "providers[0].risk.max_unknown_count: must be at least 0, got -1"},
      {"max_unknown_amount_minor: 10000000", "max_unknown_amount_minor: -5",
       "max_unknown_amount_minor", "providers[0].risk.max_unknown_amount_minor: must be at least 0"},
      {"max_unknown_count: 100", "max_unknown_count: 99999999999999999999", "max_unknown_count",
       "providers[0].risk.max_unknown_count: must be at most"},
      {"workers: 2", "workers: 0", "workers", "engine.workers: must be at least 1"},
      {"workers: 2", "workers: 2\n  breaker: {failures: 0}", "breaker",
       "engine.breaker.failures: must be at least 1"},
      {"workers: 2", "workers: 2\n  breaker: {probe_interval: 0s}", "breaker",
       "engine.breaker.probe_interval"},
      {"workers: 2", "workers: 2\n  breaker: {failure: 3}", "breaker",
       "engine.breaker.failure: unknown key 'failure' (did you mean 'failures'?)"},
      {"max_body_bytes: 65536", "max_body_bytes: 0", "max_body_bytes",
       "server.max_body_bytes: must be at least 1"},
  });
  CHECK(errors_of(edit(valid_yaml, "max_unknown_count: 100", "max_unknown_count: 0")).empty());
  const auto breaker = load_from_string(
      edit(valid_yaml, "workers: 2", "workers: 2\n  breaker: {failures: 3, probe_interval: 250ms}"), "t.yaml");
  CHECK(breaker.engine.breaker.failures == 3);
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

TEST_CASE("config: the retry window must end well inside the vendor's key retention") {
  // replay: 20h + 10s + 30s > 0.9 x 22h = 19h48m.
  std::string yaml = edit(valid_yaml, "recovery: lookup", "recovery: replay");
  yaml = edit(yaml, "key_retention: 24h", "key_retention: 22h");
  yaml = edit(yaml, "give_up_after: 1h", "give_up_after: 20h");
  check_error(
      yaml, "give_up_after",
      "providers[0].retry.give_up_after: retry.give_up_after (20h) + timeouts.request (10s) "
      "+ engine.lease (30s) = 20h40s exceeds 0.9 x contract.key_retention (22h) = 19h48m");

  // lookup with a finite not_found_final_after resubmits too; with `never` it does not.
  const std::string lookup = edit(edit(valid_yaml, "key_retention: 24h", "key_retention: 1h"),
                                  "give_up_after: 1h", "give_up_after: 55m");
  check_error(lookup, "give_up_after",
              "providers[0].retry.give_up_after: retry.give_up_after (55m)");
  CHECK(errors_of(edit(lookup, "not_found_final_after: 30s", "not_found_final_after: never"))
            .empty());
  CHECK(errors_of(edit(lookup, "recovery: lookup", "recovery: none")).empty());

  // Exactly 0.9 x key_retention is allowed: 32360s + 10s + 30s = 9h = 0.9 x 10h.
  const std::string edge = edit(edit(valid_yaml, "key_retention: 24h", "key_retention: 10h"),
                                "give_up_after: 1h", "give_up_after: 32360s");
  CHECK(errors_of(edge).empty());
  check_error(edit(edge, "give_up_after: 32360s", "give_up_after: 32361s"), "give_up_after",
              "exceeds 0.9 x contract.key_retention (10h) = 9h");
}

TEST_CASE("config: the lease must outlast the vendor request timeout by a margin for the claim") {
  // The margin is the larger of 1s and timeouts.connect (2s here): lease 30s allows request 28s.
  check_error(edit(valid_yaml, "request: 10s", "request: 30s"), "request: 30s",
              "providers[0].timeouts.request: engine.lease (30s) must be at least the vendor "
              "request timeout (30s) + a margin of 2s");
  check_error(edit(valid_yaml, "request: 10s", "request: 29s"), "request: 29s",
              "engine.lease (30s) must be at least the vendor request timeout (29s) + a margin of 2s");
  CHECK(errors_of(edit(valid_yaml, "request: 10s", "request: 28s")).empty());
  // A connect timeout under a second still leaves a second for the claim.
  const std::string quick_connect = edit(valid_yaml, "connect: 2s", "connect: 200ms");
  CHECK(errors_of(edit(quick_connect, "request: 10s", "request: 29s")).empty());
  check_error(edit(quick_connect, "request: 10s", "request: 29500ms"), "request: 29500ms",
              "a margin of 1s");
  // Without a timeouts section the default request timeout is checked, at the provider.
  const std::string yaml =
      edit(edit(valid_yaml, "    timeouts:\n      connect: 2s\n      request: 10s\n", ""),
           "lease: 30s", "lease: 5s");
  check_error(yaml, "- name: sim",
              "providers[0].timeouts.request: engine.lease (5s) must be at least");
  // A bad lease is reported once, not again by every provider's check.
  CHECK(errors_of(edit(valid_yaml, "lease: 30s", "lease: 0s")).size() == 1);
}

TEST_CASE("config: YAML syntax errors carry their line") {
  check_error("server:\n  listen: 127.0.0.1:0\n bad: indent\n", "", "YAML syntax error", 3);
  check_error("server: [1, 2\n", "", "YAML syntax error", 2);
  check_error("", "", "(top level): the file has no settings", 1);
  check_error("- a\n- b\n", "", "(top level): expected a mapping", 1);
  const std::string two_documents = valid_yaml + "---\nserver: {}\n";
  check_error(two_documents, "server: {}", "(top level): only one YAML document");
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
  TempDir dir;
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

}  // namespace payorch::config

namespace payorch::config {
namespace {

// Sets (or, given nullopt, unsets) an environment variable for one test and restores it.
class ScopedEnv {
public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

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

TEST_CASE("config: *_file paths read systemd credentials from ${CREDENTIALS_DIRECTORY}") {
  TempDir dir;
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

TEST_CASE("config: conf/payorchd.production.yaml loads with its credentials") {
  const std::string path = std::string(PAYORCH_SOURCE_DIR) + "/conf/payorchd.production.yaml";
  TempDir dir;
  for (const char* name : {"admin.token", "tenant-shop.token", "tenant-shop.webhook-secret",
                           "provider-sim.api-key", "provider-sim.callback-secret"})
    dir.write(name, std::string(name) + "-value\n");
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

}  // namespace payorch::config

// --- server.tls -------------------------------------------------------------------------------

namespace payorch::config {
namespace {

// valid_yaml with a server.tls section; `tls_lines` are its keys, four spaces in.
std::string with_tls(std::string_view tls_lines) {
  return edit(valid_yaml, "  max_body_bytes: 65536\n",
              "  max_body_bytes: 65536\n  tls:\n" + std::string(tls_lines));
}

// The key of `cert` as an encrypted PKCS#8 PEM.
std::string encrypted_key(const test::TestCert& cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> in(
      BIO_new_mem_buf(cert.key_pem.data(), static_cast<int>(cert.key_pem.size())), &BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  REQUIRE(key);
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), &BIO_free);
  char pass[] = "passphrase";
  REQUIRE(PEM_write_bio_PKCS8PrivateKey(out.get(), key.get(), EVP_aes_256_cbc(), pass,
                                        static_cast<int>(sizeof pass - 1), nullptr, nullptr) == 1);
  char* data = nullptr;
  const long len = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

}  // namespace

TEST_CASE("config: server.tls reads its PEM files relative to the config file's folder") {
  TempDir dir;
  const test::TestCert cert = test::make_self_signed_cert("IP:127.0.0.1");
  dir.write("etc/tls/server.crt", cert.cert_pem);
  const std::string key_path = dir.write("keys/server.key", cert.key_pem);
  const std::string yaml =
      with_tls("    cert_file: tls/server.crt\n    key_file: " + key_path + "\n");
  const Config c = load(dir.write("etc/payorch.yaml", yaml));
  REQUIRE(c.server.tls.has_value());
  CHECK(c.server.tls->cert_file == "tls/server.crt");
  CHECK(c.server.tls->key_file == key_path);
  CHECK(c.server.tls->cert_pem == cert.cert_pem);
  CHECK(c.server.tls->key_pem == cert.key_pem);

  // Without the section (or with an empty one) the listener is plain HTTP.
  CHECK_FALSE(load_ok(valid_yaml).server.tls.has_value());
  CHECK_FALSE(load_ok(with_tls("")).server.tls.has_value());
}

TEST_CASE("config: server.tls files may come from ${CREDENTIALS_DIRECTORY}") {
  TempDir dir;
  const test::TestCert cert = test::make_self_signed_cert("IP:127.0.0.1");
  dir.write("creds/tls.crt", cert.cert_pem);
  dir.write("creds/tls.key", cert.key_pem);
  const char* old = std::getenv("CREDENTIALS_DIRECTORY");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  ::setenv("CREDENTIALS_DIRECTORY", (dir.path() + "/creds").c_str(), 1);
  const std::vector<std::string> errors = errors_of(
      with_tls("    cert_file: ${CREDENTIALS_DIRECTORY}/tls.crt\n"
               "    key_file: ${CREDENTIALS_DIRECTORY}/tls.key\n"));
  if (saved) ::setenv("CREDENTIALS_DIRECTORY", saved->c_str(), 1);
  else ::unsetenv("CREDENTIALS_DIRECTORY");
  CHECK_MESSAGE(errors.empty(), joined(errors));
}

TEST_CASE("config: server.tls errors name the line of the file at fault") {
  TempDir dir;
  const test::TestCert cert = test::make_self_signed_cert("IP:127.0.0.1");
  const test::TestCert other = test::make_self_signed_cert("IP:127.0.0.1");
  dir.write("cert.pem", cert.cert_pem);
  dir.write("key.pem", cert.key_pem);
  dir.write("other.key", other.key_pem);
  dir.write("encrypted.key", encrypted_key(cert));
  dir.write("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n");
  dir.write("garbage.key", "-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----\n");
  dir.write("chain.pem", cert.cert_pem + other.cert_pem + "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n");
  std::filesystem::create_directories(dir.path() + "/a-directory");

  // (tls lines, the line to blame, the message)
  struct Case {
    std::string lines;
    std::string_view needle;
    std::string message;
  };
  const Case cases[] = {
      {"    cert_file: missing.pem\n    key_file: key.pem\n", "missing.pem",
       "server.tls.cert_file: cannot read " + dir.path() + "/missing.pem: No such file or directory"},
      {"    cert_file: cert.pem\n    key_file: a-directory\n", "a-directory",
       "server.tls.key_file: cannot read " + dir.path() + "/a-directory: Is a directory"},
      {"    cert_file: cert.pem\n    key_file: other.key\n", "other.key",
       "server.tls.key_file: the private key in other.key does not match the certificate in "
       "cert.pem"},
      {"    cert_file: key.pem\n    key_file: key.pem\n", "cert_file",
       "server.tls.cert_file: key.pem holds no PEM certificate"},
      {"    cert_file: cert.pem\n    key_file: cert.pem\n", "key_file",
       "server.tls.key_file: cert.pem holds no PEM private key"},
      {"    cert_file: garbage.pem\n    key_file: key.pem\n", "garbage.pem",
       "server.tls.cert_file: garbage.pem is not a readable PEM certificate"},
      {"    cert_file: cert.pem\n    key_file: garbage.key\n", "garbage.key",
       "server.tls.key_file: garbage.key is not a readable PEM private key"},
      {"    cert_file: chain.pem\n    key_file: key.pem\n", "chain.pem",
       "server.tls.cert_file: chain.pem certificate 3 is not readable"},
      {"    cert_file: cert.pem\n    key_file: encrypted.key\n", "encrypted.key",
       "server.tls.key_file: the private key is encrypted"},
      {"    cert_file: cert.pem\n", "  tls:", "server.tls.key_file: missing required key"},
      {"    cert_file: cert.pem\n    key_file: key.pem\n    key_pass: x\n", "key_pass",
       "server.tls.key_pass: unknown key 'key_pass'; expected one of: cert_file key_file"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.lines);
    const std::string yaml = with_tls(c.lines);
    const std::string path = dir.write("payorch.yaml", yaml);
    const std::vector<std::string> errors = errors_of(yaml, path);
    const std::string prefix = path + ":" + std::to_string(line_of(yaml, c.needle)) + ":";
    CHECK_MESSAGE(has_error(errors, prefix, c.message),
                  "expected \"" << prefix << " ... " << c.message << "\" among:\n" << joined(errors));
    CHECK(errors.size() == 1);
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

TEST_CASE("config: database.url_file is read when the configuration loads, from a credential too") {
  TempDir dir;
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
  check_error(with_postgres("  url: " + pg_url + "\n  max_batch: 8\n"), "max_batch:",
              "database.max_batch: applies to driver sqlite only");
  check_error(edit(valid_yaml, "path: test.db", "path: test.db\n  url: " + pg_url), "url:",
              "database.url: applies to driver postgres only (database.driver is sqlite)");
  check_error(edit(valid_yaml, "path: test.db", "path: test.db\n  pool_size: 4"), "pool_size:",
              "database.pool_size: applies to driver postgres only");
  for (const std::string& yaml : {both, not_uri})
    for (const std::string& e : errors_of(yaml)) CHECK(e.find("pg-secret-pw") == std::string::npos);
}

}  // namespace payorch::config
