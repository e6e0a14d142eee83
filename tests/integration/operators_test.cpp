// Named admin operators against the real payorchd (docs/api.md, "Operator identity"): each
// operator's token resolves cases under that operator's name, whatever a Payorch-Operator header
// claims; a header naming someone else is refused; a tenant token is no operator's.
#include <doctest/doctest.h>

#include <string>

#include "support/cases.h"
#include "support/daemon.h"
#include "support/database_probe.h"
#include "support/http_client.h"
#include "support/log_audit.h"
#include "support/payorch_api.h"

using namespace payorch::test;

namespace {

constexpr const char* alice_token = "alice-operator-token-1";
constexpr const char* bob_token = "bob-operator-token-01";

HttpResponse resolve(Daemon& daemon, const std::string& case_id, std::string_view token,
                     Headers extra = {}) {
  Headers headers{{"Authorization", "Bearer " + std::string(token)},
                  {"Content-Type", "application/json"}};
  headers.insert(headers.end(), extra.begin(), extra.end());
  return http_request(daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve", headers,
                      R"({"outcome":"failed_final","note":"the vendor has no such charge"})");
}

std::string resolved_by(Daemon& daemon, const std::string& case_id) {
  DatabaseProbe db(daemon);
  return db.query("SELECT resolved_by FROM reconciliation_cases WHERE id = ?1", {case_id})
      .at(0).at("resolved_by").value_or("");
}

}  // namespace

TEST_CASE("operators: each operator's token resolves under its own name; a claimed name is refused") {
  log_audit::register_secret(alice_token, "alice's operator token");
  log_audit::register_secret(bob_token, "bob's operator token");
  DaemonConfig config;
  config.admin =
      "admin:\n"
      "  token: \"admin-token-123\"\n"
      "  operators:\n"
      "    - {name: alice@ops, token_file: \"{dir}/alice.token\"}\n"
      "    - {name: bob, token: \"bob-operator-token-01\"}\n";
  Daemon daemon(config);
  write_file(daemon.dir() + "/alice.token", std::string(alice_token) + "\n");
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  const std::string alice_case = open_case(daemon, create_payment(daemon, "op-alice").id, 1);
  const std::string bob_case = open_case(daemon, create_payment(daemon, "op-bob").id, 2);
  const std::string admin_case = open_case(daemon, create_payment(daemon, "op-admin").id, 3);

  // Bob's token claiming to be alice: refused, nothing resolved.
  const HttpResponse impostor = resolve(daemon, alice_case, bob_token, {{"Payorch-Operator", "alice@ops"}});
  CHECK(is_problem(impostor, 403, "operator-mismatch"));
  CHECK(resolved_by(daemon, alice_case) == "");
  // A tenant's token is no operator's.
  CHECK(is_problem(resolve(daemon, alice_case, acme_token), 401, "unauthorized"));

  const HttpResponse by_alice = resolve(daemon, alice_case, alice_token, {{"Payorch-Operator", "alice@ops"}});
  REQUIRE_MESSAGE(by_alice.status == 200, by_alice.describe());
  CHECK(json_string(by_alice.json().at("case").at("resolution"), "by") == "alice@ops");
  const HttpResponse by_bob = resolve(daemon, bob_case, bob_token);
  REQUIRE_MESSAGE(by_bob.status == 200, by_bob.describe());
  CHECK(json_string(by_bob.json().at("case").at("resolution"), "by") == "bob");
  const HttpResponse by_admin = resolve(daemon, admin_case, admin_token);
  REQUIRE_MESSAGE(by_admin.status == 200, by_admin.describe());

  CHECK(resolved_by(daemon, alice_case) == "alice@ops");
  CHECK(resolved_by(daemon, bob_case) == "bob");
  CHECK(resolved_by(daemon, admin_case) == "admin");
  // The log names who resolved each case.
  const std::string log = read_file(daemon.log_path());
  CHECK(log.find("event=admin.case_resolved case_id=" + alice_case) != std::string::npos);
  CHECK(log.find("by=alice@ops") != std::string::npos);
}
