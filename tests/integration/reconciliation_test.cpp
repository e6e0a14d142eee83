// Reconciliation against the real payorchd (docs/contract.md §6, §7): a case opened in its database is
// resolved over the admin API — state, outbox event and case view agree — and the operator
// commands (`recon list|show|resolve|import`, `payment show`, `refund show`) drive the same API
// as a subprocess, over plain HTTP and over HTTPS to a server.tls daemon.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"
#include "support/cases.h"
#include "support/database_probe.h"
#include "support/engine_checks.h"
#include "support/test_cert.h"
#include "support/vendor_sim.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

const Headers admin_headers{{"Authorization", std::string("Bearer ") + admin_token},
                            {"Content-Type", "application/json"}};

std::int64_t events(Daemon& daemon, const std::string& payment_id, const std::string& type) {
  DatabaseProbe db(daemon);
  return db.count("SELECT count(*) FROM outbox WHERE payment_id = ?1 AND type = ?2", {payment_id, type});
}

std::string payment_state(Daemon& daemon, const std::string& payment_id) {
  DatabaseProbe db(daemon);
  return db.query("SELECT state FROM payments WHERE id = ?1", {payment_id}).at(0).at("state").value_or("");
}

// A config for the operator commands: the daemon's own, with the port it actually bound.
std::string cli_config(Daemon& daemon, bool tls = false) {
  const std::string listen = "127.0.0.1:" + std::to_string(daemon.port());
  DaemonConfig cfg;
  cfg.database = daemon.database_section();
  cfg.server = tls ? tls_server_section(listen) : "server: {listen: \"" + listen + "\"}";
  const std::string path = daemon.dir() + "/cli.yaml";
  std::ofstream(path) << cfg.render(daemon.dir());
  return path;
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("reconciliation: an operator resolves a case over the admin API") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const Created p = create_payment(daemon, "recon-http");
  const std::string case_id = open_case(daemon, p.id, 1);

  const HttpResponse tenant = http_request(daemon.port(), "GET", "/v1/reconciliation",
                                           {{"Authorization", std::string("Bearer ") + acme_token}});
  CHECK(is_problem(tenant, 401, "unauthorized"));

  const HttpResponse list = http_request(daemon.port(), "GET", "/v1/reconciliation?status=open", admin_headers);
  REQUIRE_MESSAGE(list.status == 200, list.describe());
  const auto cases = list.json().at("data").as_array();
  REQUIRE(cases.size() == 1);
  CHECK(json_string(cases[0], "id") == case_id);
  CHECK(json_string(cases[0], "payment_id") == p.id);
  CHECK(json_string(cases[0], "tenant_id") == "acme");
  CHECK(json_string(cases[0], "provider") == "sim");
  CHECK(cases[0].at("resolution").is_null());

  const HttpResponse bad = http_request(daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve",
                                        admin_headers, R"({"outcome":"succeeded","note":"x","extra":1})");
  CHECK(is_problem(bad, 422, "invalid-request"));

  // The resolution's author is the token's operator: admin.token is "admin".
  Headers with_operator = admin_headers;
  with_operator.emplace_back("Payorch-Operator", "admin");
  const HttpResponse resolved =
      http_request(daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve", with_operator,
                   R"({"outcome":"succeeded","note":"vendor dashboard shows it paid","vendor_reference":"ch_it_1"})");
  REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());
  const auto body = resolved.json();
  CHECK(json_string(body.at("case"), "status") == "resolved");
  CHECK(json_string(body.at("case").at("resolution"), "by") == "admin");
  CHECK(json_string(body.at("case").at("resolution"), "outcome") == "succeeded");
  CHECK(json_string(body.at("payment"), "state") == "SUCCEEDED");

  // The tenant sees the resolved payment; exactly one event announced it, in the same commit.
  const HttpResponse view = get_payment(daemon.port(), acme_token, json_string(body.at("payment"), "operation_id"));
  REQUIRE_MESSAGE(view.status == 200, view.describe());
  CHECK(json_string(view.json(), "state") == "SUCCEEDED");
  CHECK(json_string(view.json(), "vendor_reference") == "ch_it_1");
  CHECK(json_string(view.json().at("reconciliation"), "status") == "resolved");
  CHECK(events(daemon, p.id, "payment.succeeded") == 1);
  {
    DatabaseProbe db(daemon);
    const auto row = db.query("SELECT status, resolved_by, outcome, note FROM reconciliation_cases WHERE id = ?1", {case_id});
    REQUIRE(row.size() == 1);
    CHECK(row[0].at("status") == "resolved");
    CHECK(row[0].at("resolved_by") == "admin");
    CHECK(row[0].at("outcome") == "succeeded");
  }

  const HttpResponse shown = http_request(daemon.port(), "GET", "/v1/reconciliation/" + case_id, admin_headers);
  REQUIRE(shown.status == 200);
  CHECK(json_string(shown.json().at("resolution"), "note") == "vendor dashboard shows it paid");

  const HttpResponse again = http_request(daemon.port(), "POST", "/v1/reconciliation/" + case_id + "/resolve",
                                          admin_headers, R"({"outcome":"failed_final","note":"no"})");
  CHECK(is_problem(again, 409, "case-not-open"));
  CHECK(payment_state(daemon, p.id) == "SUCCEEDED");
  CHECK(events(daemon, p.id, "payment.failed") == 0);
  CHECK(events(daemon, p.id, "payment.corrected") == 0);

  const HttpResponse admin_view = http_request(daemon.port(), "GET", "/v1/admin/payments/" + p.id, admin_headers);
  REQUIRE(admin_view.status == 200);
  CHECK(json_string(admin_view.json(), "tenant_id") == "acme");
}

TEST_CASE("reconciliation: the operator commands drive the running daemon") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::string config = cli_config(daemon);
  const Created first = create_payment(daemon, "recon-cli");
  const Created second = create_payment(daemon, "recon-cli");
  const std::string first_case = open_case(daemon, first.id, 2);
  const std::string second_case = open_case(daemon, second.id, 3);

  const CommandResult status = daemon.run_command({"status", "--config", config});
  CHECK_MESSAGE(status.status.code == 0, status.output);
  CHECK(contains(status.output, "\"reconciliation\""));

  const CommandResult list = daemon.run_command({"recon", "list", "--status", "open", "--config", config});
  INFO("recon list:\n" << list.output);
  CHECK_MESSAGE((list.status.exited && list.status.code == 0), list.status.describe());
  CHECK(contains(list.output, first_case));
  CHECK(contains(list.output, second_case));
  CHECK(contains(list.output, "retry_budget_exhausted"));

  const CommandResult show = daemon.run_command({"recon", "show", first_case, "--config", config});
  CHECK_MESSAGE(show.status.code == 0, show.output);
  CHECK(contains(show.output, "\"payment_id\": \"" + first.id + "\""));

  const CommandResult usage = daemon.run_command({"recon", "resolve", first_case, "--outcome", "succeeded", "--config", config});
  CHECK_MESSAGE((usage.status.exited && usage.status.code == 2), usage.output);

  const CommandResult resolve = daemon.run_command({"recon", "resolve", first_case, "--outcome", "failed_final",
                                                    "--note", "vendor says declined",
                                                    "--config", config});
  CHECK_MESSAGE(resolve.status.code == 0, resolve.output);
  CHECK(contains(resolve.output, "FAILED_FINAL"));
  CHECK(payment_state(daemon, first.id) == "FAILED_FINAL");
  CHECK(events(daemon, first.id, "payment.failed") == 1);

  const CommandResult twice = daemon.run_command({"recon", "resolve", first_case, "--outcome", "succeeded",
                                                  "--note", "again", "--config", config});
  CHECK_MESSAGE((twice.status.exited && twice.status.code == 1), twice.output);
  CHECK(contains(twice.output, "case-not-open"));

  const CommandResult payment = daemon.run_command({"payment", "show", first.id, "--config", config});
  CHECK_MESSAGE(payment.status.code == 0, payment.output);
  CHECK(contains(payment.output, "\"tenant_id\": \"acme\""));
  CHECK(contains(payment.output, "\"state\": \"FAILED_FINAL\""));

  const std::string csv = daemon.dir() + "/settlement.csv";
  std::ofstream(csv) << "reference,status,amount_minor,currency,vendor_reference\n"
                     << second.client_key << ",succeeded,4200,EUR,ch_settled\n"
                     << "ck_NOT_OURS,succeeded,1,EUR,\n";
  const CommandResult imported = daemon.run_command({"recon", "import", "--provider", "sim", csv, "--config", config});
  CHECK_MESSAGE(imported.status.code == 0, imported.output);
  CHECK(contains(imported.output, "\"resolved\": 1"));
  CHECK(contains(imported.output, "\"unmatched\": 1"));
  CHECK(contains(imported.output, "\"ck_NOT_OURS\""));
  CHECK(payment_state(daemon, second.id) == "SUCCEEDED");
  {
    DatabaseProbe db(daemon);
    CHECK(db.count("SELECT count(*) FROM reconciliation_cases WHERE id = ?1 AND resolved_by = 'admin'",
                   {second_case}) == 1);
    CHECK(db.count("SELECT count(*) FROM reconciliation_cases WHERE payment_id IS NULL AND status = 'open'"
                   " AND provider = 'sim' AND reference = 'ck_NOT_OURS'") == 1);
  }

  const ExitStatus stopped = daemon.terminate(10s);
  CHECK(stopped.exited);
  const CommandResult down = daemon.run_command({"recon", "list", "--config", config});
  CHECK_MESSAGE((down.status.exited && down.status.code == 1), down.output);
  CHECK(contains(down.output, "payorchd is not running at 127.0.0.1:" + std::to_string(daemon.port())));
}

TEST_CASE("reconciliation: refund show and payment show name any tenant's refund to the operator") {
  VendorSim sim;
  Daemon daemon(engine_daemon_config({{.base_url = sim.base_url(), .retry = roomy_retry}}));
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::string config = cli_config(daemon);
  const PaymentRequest pay{.operation_id = unique_operation_id("cli-rf-pay"), .amount_minor = 5000};
  REQUIRE(post_payment(daemon.port(), acme_token, pay).status == 201);
  const auto paid = wait_for_state(daemon.port(), acme_token, pay.operation_id, "SUCCEEDED", 5s);
  REQUIRE(json_string(paid, "state") == "SUCCEEDED");
  const std::string op = unique_operation_id("cli-rf");
  const HttpResponse created = post_refund(daemon.port(), acme_token, pay.operation_id, op, 1500);
  REQUIRE_MESSAGE(created.status == 201, created.describe());
  const std::string refund_id = json_string(created.json(), "id");
  CHECK(eventually([&] {
    return json_string(get_refund(daemon.port(), acme_token, op).json(), "state") == "SUCCEEDED";
  }, 10s));

  const CommandResult by_id = daemon.run_command({"refund", "show", refund_id, "--config", config});
  CHECK_MESSAGE(by_id.status.code == 0, by_id.output);
  CHECK(contains(by_id.output, "\"id\": \"" + refund_id + "\""));
  CHECK(contains(by_id.output, "\"tenant_id\": \"acme\""));
  CHECK(contains(by_id.output, "\"payment_id\": \"" + json_string(paid, "id") + "\""));
  CHECK(contains(by_id.output, "\"state\": \"SUCCEEDED\""));

  const CommandResult by_op = daemon.run_command({"refund", "show", op, "--tenant", "acme", "--config", config});
  CHECK_MESSAGE(by_op.status.code == 0, by_op.output);
  CHECK(contains(by_op.output, "\"id\": \"" + refund_id + "\""));

  // An operation_id is a tenant's: without --tenant it names nothing (a usage error), and
  // another tenant has no refund of that name.
  const CommandResult no_tenant = daemon.run_command({"refund", "show", op, "--config", config});
  CHECK_MESSAGE((no_tenant.status.exited && no_tenant.status.code == 2), no_tenant.output);
  CHECK(contains(no_tenant.output, "--tenant"));
  const CommandResult other_tenant =
      daemon.run_command({"refund", "show", op, "--tenant", "globex", "--config", config});
  CHECK_MESSAGE((other_tenant.status.exited && other_tenant.status.code == 1), other_tenant.output);
  CHECK(contains(other_tenant.output, "not-found"));
  const CommandResult missing = daemon.run_command({"refund", "show", "re_NOSUCHREFUND", "--config", config});
  CHECK_MESSAGE((missing.status.exited && missing.status.code == 1), missing.output);
  CHECK(contains(missing.output, "not-found"));
  // A payment's id is not a refund's.
  const CommandResult payment_id = daemon.run_command(
      {"refund", "show", pay.operation_id, "--tenant", "acme", "--config", config});
  CHECK_MESSAGE((payment_id.status.exited && payment_id.status.code == 1), payment_id.output);

  const CommandResult payment = daemon.run_command({"payment", "show", json_string(paid, "id"), "--config", config});
  CHECK_MESSAGE(payment.status.code == 0, payment.output);
  CHECK(contains(payment.output, "\"amount_refunded_minor\": 1500"));
  CHECK(contains(payment.output, "\"refunds\": ["));
  CHECK(contains(payment.output, "\"id\": \"" + refund_id + "\""));

  const CommandResult status = daemon.run_command({"status", "--config", config});
  CHECK_MESSAGE(status.status.code == 0, status.output);
  CHECK(contains(status.output, "\"refunds\": {"));
}

TEST_CASE("reconciliation: the operator commands speak HTTPS to a server.tls daemon, verifying it"
          * doctest::test_suite("driver-free")) {
  const TestCert cert = make_self_signed_cert("IP:127.0.0.1");
  const TestCert other = make_self_signed_cert("IP:127.0.0.1");
  DaemonConfig daemon_config;
  daemon_config.server = tls_server_section("127.0.0.1:0");
  Daemon daemon(daemon_config);
  write_tls_files(daemon.dir(), cert.cert_pem, cert.key_pem);
  const std::string ca = daemon.dir() + "/ca.pem";
  const std::string wrong_ca = daemon.dir() + "/other-ca.pem";
  write_file(ca, cert.cert_pem);
  write_file(wrong_ca, other.cert_pem);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::string config = cli_config(daemon, true);
  const std::string endpoint = "127.0.0.1:" + std::to_string(daemon.port());
  const CommandResult status = daemon.run_command({"status", "--config", config, "--ca-file", ca});
  CHECK_MESSAGE((status.status.exited && status.status.code == 0), status.output);
  CHECK(contains(status.output, "\"reconciliation\""));
  // A settlement row no payment has opens a case: import, list and show it over HTTPS.
  const std::string csv = daemon.dir() + "/settlement.csv";
  write_file(csv, "reference,status,amount_minor,currency,vendor_reference\nck_TLS_NOT_OURS,succeeded,1,EUR,\n");
  const CommandResult imported =
      daemon.run_command({"recon", "import", "--provider", "sim", csv, "--ca-file", ca, "--config", config});
  CHECK_MESSAGE((imported.status.exited && imported.status.code == 0), imported.output);
  CHECK(contains(imported.output, "\"unmatched\": 1"));
  const CommandResult list =
      daemon.run_command({"recon", "list", "--ca-file=" + ca, "--status", "open", "--config", config});
  CHECK_MESSAGE((list.status.exited && list.status.code == 0), list.output);
  const std::size_t at = list.output.find("rc_");
  REQUIRE_MESSAGE(at != std::string::npos, list.output);
  const std::string case_id = list.output.substr(at, list.output.find(' ', at) - at);
  const CommandResult show = daemon.run_command({"recon", "show", case_id, "--ca-file", ca, "--config", config});
  CHECK_MESSAGE((show.status.exited && show.status.code == 0), show.output);
  CHECK(contains(show.output, "ck_TLS_NOT_OURS"));

  // Without the CA (the system trust store) or with another one: one line naming the daemon
  // and why, exit 1.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"status", "--config", config},
        std::vector<std::string>{"recon", "list", "--config", config, "--ca-file", wrong_ca}}) {
    CAPTURE(args.back());
    const CommandResult refused = daemon.run_command(args);
    CHECK_MESSAGE((refused.status.exited && refused.status.code == 1), refused.output);
    CHECK(contains(refused.output, "no trusted HTTPS connection to payorchd at " + endpoint + ": "));
    CHECK(contains(refused.output, "certificate verification failed"));
    CHECK(std::count(refused.output.begin(), refused.output.end(), '\n') == 1);
  }

  // A CA file that cannot be used is the operator's mistake: exit 2, before any connection.
  const CommandResult missing = daemon.run_command({"status", "--config", config, "--ca-file", daemon.dir() + "/nope.pem"});
  CHECK_MESSAGE((missing.status.exited && missing.status.code == 2), missing.output);
  CHECK(contains(missing.output, "payorchd: cannot read --ca-file " + daemon.dir() + "/nope.pem\n"));
  const CommandResult not_pem = daemon.run_command({"status", "--config", config, "--ca-file", config});
  CHECK_MESSAGE((not_pem.status.exited && not_pem.status.code == 2), not_pem.output);
  CHECK(contains(not_pem.output, "holds no PEM certificate"));
  const CommandResult twice = daemon.run_command({"status", "--config", config, "--ca-file", ca, "--ca-file", ca});
  CHECK_MESSAGE((twice.status.exited && twice.status.code == 2), twice.output);
  CHECK(contains(twice.output, "--ca-file given twice"));

  // A trusted certificate that names another host than the one connected to.
  const TestCert localhost = make_self_signed_cert("DNS:localhost");
  daemon.kill9();
  write_tls_files(daemon.dir(), localhost.cert_pem, localhost.key_pem);
  write_file(ca, localhost.cert_pem);
  daemon.start();
  const std::string moved = cli_config(daemon, true);
  const std::string moved_endpoint = "127.0.0.1:" + std::to_string(daemon.port());
  const CommandResult mismatch = daemon.run_command({"status", "--config", moved, "--ca-file", ca});
  CHECK_MESSAGE((mismatch.status.exited && mismatch.status.code == 1), mismatch.output);
  CHECK(contains(mismatch.output, "no trusted HTTPS connection to payorchd at " + moved_endpoint + ": "));
  CHECK(contains(mismatch.output, "IP address mismatch"));
  CHECK(std::count(mismatch.output.begin(), mismatch.output.end(), '\n') == 1);

  const ExitStatus stopped = daemon.terminate(10s);
  CHECK(stopped.exited);
  const CommandResult down = daemon.run_command({"status", "--config", moved, "--ca-file", ca});
  CHECK_MESSAGE((down.status.exited && down.status.code == 1), down.output);
  CHECK(down.output == "payorchd is not running at " + moved_endpoint + " (connection refused)\n");
}

TEST_CASE("reconciliation: a settlement file with a kind column settles refunds; a refund's case names it") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  // The vendor is unreachable: the payment stays PROCESSING and its refunds DEFERRED until a
  // settlement file says the charge succeeded.
  const Created p = create_payment(daemon, "recon-refund");
  const std::string payment_op = json_string(
      http_request(daemon.port(), "GET", "/v1/admin/payments/" + p.id, admin_headers).json(), "operation_id");
  std::vector<std::string> refund_ops, refund_ids, refund_keys;
  for (int i = 0; i < 2; ++i) {
    refund_ops.push_back(unique_operation_id("recon-rf"));
    const HttpResponse r = http_request(
        daemon.port(), "POST", "/v1/payments/" + payment_op + "/refunds", tenant_headers(acme_token),
        R"({"operation_id":")" + refund_ops.back() + R"(","amount_minor":1000})");
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    CHECK(json_string(r.json(), "state") == "DEFERRED");
    refund_ids.push_back(json_string(r.json(), "id"));
    refund_keys.push_back(json_string(r.json(), "client_key"));
  }
  const auto settle = [&](const std::string& csv) {
    const Headers h{{"Authorization", std::string("Bearer ") + admin_token}, {"Content-Type", "text/csv"}};
    const HttpResponse r = http_request(daemon.port(), "POST", "/v1/reconciliation/import?provider=sim", h, csv);
    REQUIRE_MESSAGE(r.status == 200, r.describe());
    return r.json();
  };
  // The charge settles (no kind column: a charge); its refunds leave DEFERRED in that commit.
  const auto charged = settle("reference,status,amount_minor,currency,vendor_reference\n" + p.client_key +
                              ",succeeded,4200,EUR,ch_rc\n");
  CHECK(json_int(charged, "finalized") == 1);
  // The first refund settles; the second's row says charge: a mismatch, held by a case.
  const auto settled = settle("reference,status,amount_minor,currency,vendor_reference,kind\n" +
                              refund_keys[0] + ",succeeded,1000,EUR,rf_rc,refund\n" + refund_keys[1] +
                              ",succeeded,1000,EUR,rf_rc2,charge\n");
  CHECK(json_int(settled, "finalized") == 1);
  CHECK(json_int(settled, "mismatched") == 1);
  const HttpResponse refund = http_request(daemon.port(), "GET", "/v1/refunds/" + refund_ops[0], tenant_headers(acme_token));
  REQUIRE_MESSAGE(refund.status == 200, refund.describe());
  CHECK(json_string(refund.json(), "state") == "SUCCEEDED");
  CHECK(json_string(refund.json(), "vendor_reference") == "rf_rc");
  const HttpResponse payment = get_payment(daemon.port(), acme_token, payment_op);
  REQUIRE(payment.status == 200);
  CHECK(json_string(payment.json(), "state") == "SUCCEEDED");
  CHECK(json_int(payment.json(), "amount_refunded_minor") == 1000);

  const HttpResponse list = http_request(daemon.port(), "GET", "/v1/reconciliation?status=open", admin_headers);
  REQUIRE_MESSAGE(list.status == 200, list.describe());
  const boost::json::value listed = list.json();
  const auto& cases = listed.at("data").as_array();
  REQUIRE(cases.size() == 1);
  CHECK(json_string(cases[0], "reason") == "callback_mismatch");
  CHECK(json_string(cases[0], "payment_id") == p.id);
  CHECK(json_string(cases[0], "refund_id") == refund_ids[1]);
  CHECK(json_string(cases[0], "operation_id") == refund_ops[1]);

  // Resolving a refund's case answers with the refund as it is now, not as a payment.
  const HttpResponse resolved = http_request(
      daemon.port(), "POST", "/v1/reconciliation/" + json_string(cases[0], "id") + "/resolve", admin_headers,
      R"({"outcome":"succeeded","note":"the vendor's dashboard shows the refund","vendor_reference":"rf_rc2"})");
  REQUIRE_MESSAGE(resolved.status == 200, resolved.describe());
  const boost::json::value body = resolved.json();
  CHECK(body.at("payment").is_null());
  CHECK(json_string(body.at("refund"), "id") == refund_ids[1]);
  CHECK(json_string(body.at("refund"), "state") == "SUCCEEDED");
  CHECK(json_string(body.at("refund"), "tenant_id") == "acme");
  CHECK(json_int(get_payment(daemon.port(), acme_token, payment_op).json(), "amount_refunded_minor") == 2000);
}
