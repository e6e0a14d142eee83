// admin.operators[] and what a reload (SIGHUP) may change: config/secrets.h.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_fixture.h"
#include "config/secrets.h"
#include "support/process.h"

using namespace payorch;
using namespace payorch::test;

namespace {

const std::string two_operators =
    "admin:\n"
    "  token: admin-token-0001\n"
    "  operators:\n"
    "    - name: alice@ops.example\n"
    "      token: alice-token-0001\n"
    "    - name: bob\n"
    "      token: bob-token-00001\n";

std::string with_admin(const std::string& admin) {
  return edit(valid_yaml, "admin:\n  token: admin-token-0001\n", admin);
}


}  // namespace

TEST_CASE("config: admin.operators are read, each with its own token") {
  const config::Config c = load_ok(with_admin(two_operators));
  CHECK(c.admin_token == "admin-token-0001");
  REQUIRE(c.operators.size() == 2);
  CHECK(c.operators[0].name == "alice@ops.example");
  CHECK(c.operators[0].token == "alice-token-0001");
  CHECK(c.operators[1].name == "bob");
  const config::Secrets s = config::secrets_of(c);
  REQUIRE(s.operators.size() == 3);
  CHECK(s.operators[0].name == "admin");  // admin.token is the operator "admin"

  // Operators alone, without admin.token.
  const config::Config only = load_ok(with_admin(
      "admin:\n  operators:\n    - {name: carol, token: carol-token-0001}\n"));
  CHECK(only.admin_token.empty());
  REQUIRE(only.operators.size() == 1);
}

TEST_CASE("config: operator names and tokens are checked, each error on its line") {
  check_error(with_admin("admin:\n  operators:\n    - {name: \"al ice\", token: alice-token-0001}\n"),
              "al ice", "admin.operators[0].name: operator names are 1-64 characters of [A-Za-z0-9._@-]");
  check_error(with_admin("admin:\n  operators:\n    - {name: \"" + std::string(65, 'a') +
                         "\", token: alice-token-0001}\n"),
              "aaaa", "admin.operators[0].name: operator names are 1-64");
  check_error(with_admin(two_operators + "    - {name: bob, token: bob-token-00002}\n"),
              "bob-token-00002", "admin.operators[2].name: duplicate operator name \"bob\"");
  check_error(with_admin(two_operators + "    - {name: admin, token: other-token-0001}\n"),
              "other-token-0001", "admin.operators[2].name: duplicate operator name \"admin\" (first given as admin.token)");
  // Tokens are unique across operators, admin.token and tenants; the token is never shown.
  check_error(with_admin(two_operators + "    - {name: dave, token: bob-token-00001}\n"),
              "name: dave", "admin.operators[2].token: the same token is already used by admin.operators[1] (bob)");
  check_error(with_admin(two_operators + "    - {name: dave, token: acme-token-0001}\n"),
              "token: acme-token-0001\n    webhook",
              "tenants[0].token: the same token is already used by admin.operators[2] (dave)");
  check_error(with_admin("admin:\n  operators:\n    - {name: erin, token: short}\n"), "short",
              "admin.operators[0].token: too short");
  check_error(with_admin("admin:\n  operators:\n    - {name: erin}\n"), "name: erin",
              "admin.operators[0].token: missing required key (or token_file)");
  check_error(with_admin("admin:\n  operators: []\n"), "operators", "admin.operators: at least one operator is required");
  // Neither admin.token nor operators.
  check_error(with_admin("admin: {}\n"), "admin", "admin.token: missing required key (or token_file)");
  for (const std::string& e : errors_of(with_admin(two_operators + "    - {name: dave, token: bob-token-00001}\n")))
    CHECK(e.find("bob-token-00001") == std::string::npos);
}

TEST_CASE("config: a reload changes secrets only; other changes are named by section") {
  const config::Config running = load_ok(valid_yaml);
  // New secrets everywhere: nothing needs a restart.
  std::string rotated = edit(valid_yaml, "token: acme-token-0001", "token: acme-token-0002");
  rotated = edit(rotated, "secret: acme-webhook-secret", "secret: acme-webhook-secret2");
  rotated = edit(rotated, "api_key: sim-api-key-0001", "api_key: sim-api-key-0002");
  rotated = edit(rotated, "secret: sim-callback-secret", "secret: sim-callback-secret2");
  rotated = edit(rotated, "admin:\n  token: admin-token-0001\n", two_operators);
  const config::Config next = load_ok(rotated);
  CHECK(config::restart_only_changes(running, next).empty());

  const config::Secrets current = config::secrets_of(running);
  const config::Secrets s = config::reloaded_secrets(current, running, next);
  CHECK(s.operators.size() == 3);
  REQUIRE(s.tenant_tokens.size() == 1);
  CHECK(s.tenant_tokens[0].second == "acme-token-0002");
  CHECK(s.webhook_secrets.at("acme") == "acme-webhook-secret2");
  CHECK(s.api_keys.at("sim") == "sim-api-key-0002");
  CHECK(s.callback_secrets.at("sim") == "sim-callback-secret2");

  // Anything else is reported by section, and a tenant or provider the running daemon does not
  // have gets no secrets until a restart.
  std::string other = edit(valid_yaml, "workers: 2", "workers: 3");
  other = edit(other, "listen: 127.0.0.1:0", "listen: 127.0.0.1:1");
  other = edit(other, "providers:\n", "  - {id: globex, token: globex-token-01}\nproviders:\n");
  const config::Config changed = load_ok(other);
  std::vector<std::string> sections = config::restart_only_changes(running, changed);
  std::sort(sections.begin(), sections.end());
  CHECK(sections == std::vector<std::string>{"engine", "server", "tenants"});
  const config::Secrets kept = config::reloaded_secrets(current, running, changed);
  REQUIRE(kept.tenant_tokens.size() == 1);
  CHECK(kept.tenant_tokens[0].first == "acme");
}

TEST_CASE("config: ProviderSecrets follows the live secrets once the config is live") {
  config::Config cfg = load_ok(valid_yaml);
  const config::ProviderSecrets fixed(cfg.providers[0]);
  config::make_live(cfg);
  const config::ProviderSecrets live(cfg.providers[0]);
  config::Secrets next = *cfg.live->get();
  next.api_keys["sim"] = "sim-api-key-0002";
  next.callback_secrets["sim"] = "sim-callback-secret2";
  next.webhook_secrets["acme"] = "acme-webhook-secret2";
  cfg.live->publish(next);
  CHECK(fixed.api_key() == "sim-api-key-0001");
  CHECK(live.api_key() == "sim-api-key-0002");
  CHECK(live.callback_secret() == "sim-callback-secret2");
  CHECK(config::webhook_secret(cfg, "acme") == "acme-webhook-secret2");
  CHECK(config::webhook_secret(cfg, "nobody").empty());
}

TEST_CASE("config: a reload rotates wechatpay keys with their serials, not a restart-only change") {
  test::TempDir dir("payorch-secrets");
  const auto load_file = [&dir](const std::string& name, const std::string& yaml) {
    return config::load(dir.write(name, yaml));
  };
  const config::Config running = load_file(
      "running.yaml", with_wechatpay("MERCHANT0SERIAL0TEST", "merchant_private.pem", "PLATFORM0SERIAL0TEST", "platform_public.pem"));
  const config::Config next = load_file(
      "next.yaml", with_wechatpay("MERCHANT0SERIAL0NEXT", "other_private.pem", "PLATFORM0SERIAL0NEXT", "merchant_public.pem"));
  CHECK(config::restart_only_changes(running, next).empty());

  const config::Secrets current = config::secrets_of(running);
  const std::string name = running.providers.at(0).name;
  CHECK(current.adapter_keys.at(name).serial_no == "MERCHANT0SERIAL0TEST");
  const config::Secrets s = config::reloaded_secrets(current, running, next);
  const config::AdapterKeys& keys = s.adapter_keys.at(name);
  CHECK(keys.serial_no == "MERCHANT0SERIAL0NEXT");
  CHECK(keys.private_key == next.providers.at(0).options.private_key);
  CHECK(keys.private_key != running.providers.at(0).options.private_key);
  CHECK(keys.platform_serial == "PLATFORM0SERIAL0NEXT");
  CHECK(keys.platform_public_key == next.providers.at(0).options.platform_public_key);
  CHECK(keys.api_v3_key.size() == 32);

  // Another option of the adapter still needs a restart.
  const config::Config other_product = load_file(
      "codepay.yaml",
      with_wechatpay("MERCHANT0SERIAL0TEST", "merchant_private.pem", "PLATFORM0SERIAL0TEST", "platform_public.pem", "codepay"));
  CHECK(config::restart_only_changes(running, other_product) == std::vector<std::string>{"providers"});

  // ProviderSecrets hands out the keys published last, key and serial from one snapshot.
  config::Config live = running;
  config::make_live(live);
  const config::ProviderSecrets provider(live.providers.at(0));
  CHECK(provider.adapter_keys()->serial_no == "MERCHANT0SERIAL0TEST");
  live.live->publish(s);
  CHECK(provider.adapter_keys()->serial_no == "MERCHANT0SERIAL0NEXT");
  CHECK(provider.adapter_keys()->private_key == keys.private_key);
}
