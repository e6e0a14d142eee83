// payorchd's command line: usage and --help on every command, usage errors, and the operator
// commands run with only a client configuration (or flags, or the environment) — never the
// daemon's own configuration, whose secrets an operator's account need not read.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/payorch_api.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// `payorchd ARGS...` with stdout only in the output (stderr to /dev/null), or stderr only.
CommandResult run_payorchd(Daemon& daemon, const std::vector<std::string>& args, bool keep_stdout) {
  std::string line = "exec '" PAYORCHD_PATH "'";
  for (const auto& a : args) line += " '" + a + "'";
  line += keep_stdout ? " 2>/dev/null" : " >/dev/null";
  static int n = 0;
  return run_to_completion({"/bin/sh", "-c", line}, daemon.dir() + "/cli-" + std::to_string(++n) + ".log", 20s);
}

// The operator's client configuration: the daemon's address and a copy of the admin token.
std::string client_config(Daemon& daemon, const std::string& extra = "") {
  std::ofstream(daemon.dir() + "/operator.token") << admin_token << "\n";
  const std::string path = daemon.dir() + "/client.yaml";
  std::ofstream(path) << "url: http://127.0.0.1:" << daemon.port() << "\n"
                      << "token_file: operator.token\n"
                      << extra;
  return path;
}

}  // namespace

TEST_CASE("cli: --help prints every command's usage on stdout and exits 0" * doctest::test_suite("driver-free")) {
  Daemon daemon;  // not started: for its temp dir
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"-h"}, {"help"}, {"help", "backup"}, {"serve", "--help"}, {"check-config", "--help"},
           {"migrate", "--help"}, {"check-exposure", "--help"}, {"backup", "--help"}, {"restore", "-h"},
           {"version", "--help"}, {"status", "--help"}, {"recon", "--help"}, {"recon", "resolve", "--help"},
           {"payment", "show", "--help"}, {"refund", "show", "--help"}}) {
    const CommandResult r = run_payorchd(daemon, args, true);
    INFO(args[0] << " " << (args.size() > 1 ? args[1] : "") << ": " << r.output);
    CHECK((r.status.exited && r.status.code == 0));
    CHECK(contains(r.output, "usage: payorchd"));
  }
  // Usage errors: on stderr, nothing on stdout, exit 2.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {}, {"bogus"}, {"backup"}, {"restore", "--config"}, {"serve", "--to", "x"}, {"recon", "frobnicate"},
           {"recon", "resolve", "rc_1", "--outcome", "retry", "--note", "x", "--operator", "bob"}}) {
    const CommandResult out = run_payorchd(daemon, args, true);
    const CommandResult err = run_payorchd(daemon, args, false);
    INFO((args.empty() ? std::string("(none)") : args[0]) << ": " << err.output);
    CHECK((out.status.exited && out.status.code == 2));
    CHECK(out.output.empty());
    CHECK(contains(err.output, "usage: payorchd"));
  }
  // backup and restore are SQLite's: on PostgreSQL they point to pg_dump (exit 2).
  DaemonConfig on_postgres;
  on_postgres.database = R"(database: {driver: postgres, url: "postgresql://payorch@127.0.0.1:1/payorch"})";
  const std::string pg_config = daemon.dir() + "/postgres.yaml";
  std::ofstream(pg_config) << on_postgres.render(daemon.dir());
  for (const char* command : {"backup", "restore"}) {
    const CommandResult refused = daemon.run_command(
        {command, "--config", pg_config, std::string(command) == "backup" ? "--to" : "--from", daemon.dir() + "/x.db"});
    INFO(command << ": " << refused.output);
    CHECK((refused.status.exited && refused.status.code == 2));
    CHECK(contains(refused.output, "pg_dump"));
  }
  const CommandResult gone = run_payorchd(
      daemon, {"recon", "resolve", "rc_1", "--outcome", "retry", "--note", "x", "--operator", "bob"}, false);
  CHECK(contains(gone.output, "the operator is the one the admin token names"));
}

TEST_CASE("cli: operator commands need only the client configuration") {
  DaemonConfig cfg;
  Daemon daemon(cfg);
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  // The daemon's configuration is nowhere the commands could read it.
  const std::string nowhere = daemon.dir() + "/no-such-dir/payorchd.yaml";
  const std::string client = client_config(daemon);

  const CommandResult status = daemon.run_command({"status", "--client-config", client, "--json"});
  REQUIRE_MESSAGE((status.status.exited && status.status.code == 0), status.output);
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(status.output, ec);
  CHECK_MESSAGE(!ec, "not one JSON document: " << status.output);
  CHECK((doc.is_object() && doc.as_object().contains("reconciliation")));

  // One operation_id, two tenants: by operation_id the CLI lists both and asks for --tenant.
  const std::string op = unique_operation_id("cli-op");
  const HttpResponse acme = post_payment(daemon.port(), acme_token, PaymentRequest{.operation_id = op, .amount_minor = 1111});
  REQUIRE(acme.status == 201);
  const std::string acme_id = json_string(acme.json(), "id");
  const std::string only_acme = unique_operation_id("cli-op-acme");
  REQUIRE(post_payment(daemon.port(), acme_token, PaymentRequest{.operation_id = only_acme}).status == 201);
  const HttpResponse globex = post_payment(daemon.port(), globex_token, PaymentRequest{.operation_id = op, .amount_minor = 2222});
  REQUIRE(globex.status == 201);
  const std::string globex_id = json_string(globex.json(), "id");

  const CommandResult both = daemon.run_command({"payment", "show", op, "--client-config", client});
  CHECK_MESSAGE((both.status.exited && both.status.code == 1), both.output);
  CHECK(contains(both.output, acme_id));
  CHECK(contains(both.output, globex_id));
  CHECK(contains(both.output, "--tenant"));
  const CommandResult one = daemon.run_command({"payment", "show", op, "--tenant", "globex", "--client-config", client, "--json"});
  CHECK_MESSAGE((one.status.exited && one.status.code == 0), one.output);
  CHECK(contains(one.output, "\"id\":\"" + globex_id + "\""));
  CHECK(contains(one.output, "\"refunds\":[]"));
  const CommandResult single = daemon.run_command({"payment", "show", only_acme, "--client-config", client});
  CHECK_MESSAGE((single.status.exited && single.status.code == 0), single.output);
  CHECK(contains(single.output, "\"tenant_id\": \"acme\""));
  const CommandResult by_id = daemon.run_command({"payment", "show", acme_id, "--client-config", client, "--json"});
  CHECK_MESSAGE((by_id.status.exited && by_id.status.code == 0), by_id.output);
  CHECK(contains(by_id.output, "\"amount_minor\":1111"));
  const CommandResult none = daemon.run_command({"payment", "show", "cli-no-such-op", "--client-config", client});
  CHECK_MESSAGE((none.status.exited && none.status.code == 1), none.output);

  // Flags, and the environment, instead of the file; --config with them is a usage error.
  const std::string url = "http://127.0.0.1:" + std::to_string(daemon.port());
  const std::string token = daemon.dir() + "/operator.token";
  const CommandResult flags = daemon.run_command({"recon", "list", "--url", url, "--token-file", token, "--json"});
  CHECK_MESSAGE((flags.status.exited && flags.status.code == 0), flags.output);
  CHECK(contains(flags.output, "\"data\":[]"));
  const CommandResult both_sources = daemon.run_command({"status", "--url", url, "--token-file", token, "--config", nowhere});
  CHECK_MESSAGE((both_sources.status.exited && both_sources.status.code == 2), both_sources.output);
  daemon.set_env("PAYORCH_URL", url);
  daemon.set_env("PAYORCH_TOKEN_FILE", token);
  const CommandResult env = daemon.run_command({"status"});
  CHECK_MESSAGE((env.status.exited && env.status.code == 0), env.output);
  daemon.set_env("PAYORCH_TOKEN_FILE", daemon.dir() + "/missing.token");
  const CommandResult no_token = daemon.run_command({"status"});
  CHECK_MESSAGE((no_token.status.exited && no_token.status.code == 2), no_token.output);
  CHECK(contains(no_token.output, "missing.token"));
  daemon.set_env("PAYORCH_URL", std::nullopt);
  daemon.set_env("PAYORCH_TOKEN_FILE", std::nullopt);

  // A wrong token is the daemon's refusal (exit 1); a bad client configuration is line-numbered.
  std::ofstream(daemon.dir() + "/wrong.token") << "not-the-admin-token\n";
  const CommandResult wrong = daemon.run_command({"recon", "list", "--url", url, "--token-file", daemon.dir() + "/wrong.token"});
  CHECK_MESSAGE((wrong.status.exited && wrong.status.code == 1), wrong.output);
  const std::string bad = daemon.dir() + "/bad-client.yaml";
  std::ofstream(bad) << "url: ftp://127.0.0.1:1\ntoken_file: operator.token\ncolour: red\n";
  const CommandResult invalid = daemon.run_command({"status", "--client-config", bad});
  CHECK_MESSAGE((invalid.status.exited && invalid.status.code == 2), invalid.output);
  CHECK(contains(invalid.output, bad + ":1:"));
  CHECK(contains(invalid.output, bad + ":3:"));
  CHECK(contains(invalid.output, "colour"));
}
