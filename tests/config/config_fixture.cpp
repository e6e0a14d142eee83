#include "config/config_fixture.h"

#include <doctest/doctest.h>

#include <stdlib.h>

#include <algorithm>

namespace payorch::test {

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

std::string edit(std::string yaml, std::string_view from, std::string_view to) {
  const std::size_t at = yaml.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "not in the YAML: " << from);
  REQUIRE_MESSAGE(yaml.find(from, at + 1) == std::string::npos, "ambiguous edit: " << from);
  yaml.replace(at, from.size(), to);
  return yaml;
}

std::string with_wechatpay(const std::string& serial_no, const std::string& private_key, const std::string& platform_serial,
                           const std::string& platform_key, const std::string& product) {
  const std::string keys = std::string(PAYORCH_SOURCE_DIR) + "/tests/emulators/wechatpay/keys/";
  const std::string preset = std::string(PAYORCH_SOURCE_DIR) + "/conf/providers/wechatpay.yaml";
  std::string yaml = edit(valid_yaml, "    adapter: sim\n    base_url: http://127.0.0.1:8090/\n    api_key: sim-api-key-0001\n",
                          "    adapter: wechatpay\n    preset: " + preset + "\n" +
                              "    options:\n"
                              "      mchid: \"1900000109\"\n"
                              "      appid: wxd678efh567hg6787\n"
                              "      serial_no: " + serial_no + "\n"
                              "      private_key_file: " + keys + private_key + "\n"
                              "      platform_serial: " + platform_serial + "\n"
                              "      platform_public_key_file: " + keys + platform_key + "\n"
                              "      api_v3_key_file: " + keys + "api_v3_key.txt\n"
                              "      product: " + product + "\n"
                              "      notify_url: https://payorch.example/callbacks/wechatpay\n");
  yaml = edit(yaml, "    contract:\n      key_retention: 24h\n      recovery: lookup\n      not_found_final_after: 30s\n", "");
  yaml = edit(yaml, "      give_up_after: 1h\n", "");
  yaml = edit(yaml, "      secret: sim-callback-secret\n", "");
  return edit(yaml, "      retry_horizon: 24h\n", "");
}

std::string with_second_provider(const std::string& yaml) {
  return edit(yaml, "routing:\n", second_provider + "routing:\n");
}

int line_of(const std::string& yaml, std::string_view needle) {
  const std::size_t at = yaml.find(needle);
  REQUIRE_MESSAGE(at != std::string::npos, "not in the YAML: " << needle);
  return 1 + static_cast<int>(std::count(yaml.begin(), yaml.begin() + static_cast<long>(at), '\n'));
}

std::string line_prefix(const std::string& file, const std::string& yaml, std::string_view needle) {
  return file + ":" + std::to_string(line_of(yaml, needle)) + ":";
}

std::vector<std::string> errors_of(const std::string& yaml, const std::string& name) {
  std::vector<std::string> lines;
  try {
    config::load_from_string(yaml, name);
  } catch (const config::ConfigError& e) {
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

bool has_error(const std::vector<std::string>& errors, const std::string& prefix,
               std::string_view message) {
  return std::any_of(errors.begin(), errors.end(), [&](const std::string& e) {
    return e.starts_with(prefix) && e.find(message) != std::string::npos;
  });
}

void check_error(const std::string& yaml, std::string_view needle, std::string_view message,
                 int line) {
  const std::vector<std::string> errors = errors_of(yaml);
  const std::string prefix =
      "test.yaml:" + std::to_string(line ? line : line_of(yaml, needle)) + ":";
  CHECK_MESSAGE(has_error(errors, prefix, message),
                "expected \"" << prefix << " ... " << message << "\" among:\n" << joined(errors));
}

void check_edits(std::initializer_list<BadEdit> cases) {
  for (const BadEdit& c : cases) {
    CAPTURE(c.to);
    check_error(edit(valid_yaml, c.from, c.to), c.needle, c.message);
  }
}

config::Config load_ok(const std::string& yaml, const std::string& name) {
  const std::vector<std::string> errors = errors_of(yaml, name);
  REQUIRE_MESSAGE(errors.empty(), joined(errors));
  return config::load_from_string(yaml, name);
}

ScopedEnv::ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value) ::setenv(name, value->c_str(), 1);
  else ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (old_) ::setenv(name_, old_->c_str(), 1);
  else ::unsetenv(name_);
}

}  // namespace payorch::test
