// The operator commands' client configuration (ops/client_config.h): the daemon's address as a
// URL, the token read from a file beside it, every problem line-numbered.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "config/config.h"
#include "ops/client_config.h"
#include "support/process.h"

using payorch::ops::DaemonAddress;
using payorch::ops::load_client_config;
using payorch::ops::parse_daemon_url;
using payorch::test::TempDir;
using payorch::test::write_file;

namespace {

std::string refusal(const std::string& url) {
  try {
    parse_daemon_url(url, "--url");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string config_error(const std::string& path) {
  try {
    load_client_config(path);
  } catch (const payorch::config::ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("client config: a daemon URL is a scheme, a host and a port") {
  const DaemonAddress plain = parse_daemon_url("http://127.0.0.1:8080", "--url");
  CHECK(plain.host == "127.0.0.1");
  CHECK(plain.port == 8080);
  CHECK_FALSE(plain.tls);
  const DaemonAddress tls = parse_daemon_url("https://[::1]:8443/", "--url");
  CHECK(tls.host == "::1");
  CHECK(tls.port == 8443);
  CHECK(tls.tls);
  CHECK(parse_daemon_url("https://payorch.internal:443", "--url").host == "payorch.internal");
  for (const char* bad : {"127.0.0.1:8080", "ftp://127.0.0.1:21", "http://127.0.0.1", "http://127.0.0.1:0",
                          "http://127.0.0.1:8080/v1", "http://u:p@127.0.0.1:8080", "http://127.0.0.1:8080?x=1", ""}) {
    INFO(bad);
    CHECK(refusal(bad).starts_with("--url: '"));
  }
}

TEST_CASE("client config: url, a token file beside it, an optional CA file") {
  TempDir dir("payorch-client-config");
  write_file(dir.path() + "/admin.token", "secret-admin-token\n\n");
  write_file(dir.path() + "/client.yaml", "url: https://127.0.0.1:8443\ntoken_file: admin.token\nca_file: ca.pem\n");
  const auto s = load_client_config(dir.path() + "/client.yaml");
  CHECK(s.address.host == "127.0.0.1");
  CHECK(s.address.port == 8443);
  CHECK(s.address.tls);
  CHECK(s.token == "secret-admin-token");
  REQUIRE(s.ca_file.has_value());
  CHECK(*s.ca_file == dir.path() + "/ca.pem");

  write_file(dir.path() + "/bad.yaml", "url: http://127.0.0.1\ntoken_file: missing.token\nextra: 1\n");
  const std::string report = config_error(dir.path() + "/bad.yaml");
  CHECK(report.find(dir.path() + "/bad.yaml:1:") != std::string::npos);
  CHECK(report.find(dir.path() + "/bad.yaml:2:") != std::string::npos);
  CHECK(report.find("missing.token") != std::string::npos);
  CHECK(report.find(dir.path() + "/bad.yaml:3:") != std::string::npos);
  CHECK(report.find("extra") != std::string::npos);
  write_file(dir.path() + "/empty.yaml", "");
  CHECK(config_error(dir.path() + "/empty.yaml").find("url") != std::string::npos);
  CHECK(config_error(dir.path() + "/none.yaml").find("cannot read") != std::string::npos);
}
