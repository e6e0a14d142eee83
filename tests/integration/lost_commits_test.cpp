// Committed transactions a database no longer holds (docs/operations.md, "Lost commits"): a
// -wal file deleted while payorchd was stopped after kill -9 takes every commit not yet
// checkpointed with it. payorchd must not start on such a database as if nothing happened: it
// compares the database's commit sequence with the commit mark kept beside it, refuses with both
// figures, and starts only when the operator passes --accept-lost-commits. A kill -9 that leaves
// the WAL alone never trips it.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/payorch_api.h"
#include "support/database_probe.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

std::string mark_path(const Daemon& daemon) { return daemon.db_path() + ".commit-mark"; }

// The commit sequence in the mark file; -1 while there is none.
std::int64_t mark_of(const Daemon& daemon) {
  const std::string text = read_file(mark_path(daemon));
  if (text.empty() || text.find_first_not_of("0123456789\n") != std::string::npos) return -1;
  return std::stoll(text);
}

// Accepts `n` payments and waits until the commit mark has caught up with the database (it
// trails the database by at most a second).
std::vector<PaymentRequest> accept_payments(Daemon& daemon, int n, const std::string& prefix) {
  std::vector<PaymentRequest> accepted;
  for (int i = 0; i < n; ++i) {
    const PaymentRequest req{.operation_id = unique_operation_id(prefix)};
    const HttpResponse r = post_payment(daemon.port(), acme_token, req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    accepted.push_back(req);
  }
  const std::int64_t committed =
      DatabaseProbe(daemon).count("SELECT seq FROM commit_sequence WHERE id = 1");
  CHECK(committed >= n);
  CHECK_MESSAGE(eventually([&] { return mark_of(daemon) >= committed; }, 5s),
                "the commit mark " << mark_of(daemon) << " never reached " << committed);
  return accepted;
}

int missing_payments(const Daemon& daemon, const std::vector<PaymentRequest>& payments) {
  int missing = 0;
  for (const auto& p : payments) {
    const HttpResponse r = get_payment(daemon.port(), acme_token, p.operation_id);
    if (r.status == 404) ++missing;
    else CHECK_MESSAGE(r.status == 200, r.describe());
  }
  return missing;
}

// The value of `field=` in the last line of `log` that holds `event`.
std::string field_of(const std::string& log, const std::string& event, const std::string& field) {
  const std::size_t line = log.rfind("event=" + event + " ");
  if (line == std::string::npos) return "";
  const std::size_t end_of_line = log.find('\n', line);
  const std::size_t at = log.find(" " + field + "=", line);
  if (at == std::string::npos || at > end_of_line) return "";
  const std::size_t from = at + field.size() + 2;
  return log.substr(from, log.find_first_of(" \n", from) - from);
}

}  // namespace

TEST_CASE("lost commits: a -wal file deleted after kill -9 is refused with both figures, and started only on request"
          * doctest::test_suite("sqlite-only")) {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));
  const std::vector<PaymentRequest> accepted = accept_payments(daemon, 16, "lost");
  const std::int64_t mark = mark_of(daemon);

  daemon.kill9();
  const std::string wal = daemon.db_path() + "-wal";
  REQUIRE(std::filesystem::exists(wal));
  REQUIRE(std::filesystem::file_size(wal) > 0);  // the 16 payments are only there
  std::filesystem::remove(wal);

  const ExitStatus refused = daemon.start_expecting_exit();
  CHECK_MESSAGE(refused.exited, refused.describe());
  CHECK(refused.code == 1);
  const std::string log = read_file(daemon.log_path());
  CHECK(log.find("level=error event=database.commits_missing ") != std::string::npos);
  CHECK(log.find("docs/operations.md") != std::string::npos);
  CHECK(log.find("--accept-lost-commits") != std::string::npos);
  const std::string database_seq = field_of(log, "database.commits_missing", "database_commit_seq");
  CHECK(field_of(log, "database.commits_missing", "mark_commit_seq") == std::to_string(mark));
  REQUIRE(!database_seq.empty());
  CHECK(std::stoll(database_seq) < mark);
  CHECK(mark_of(daemon) == mark);  // a refused start changes nothing

  // The operator has looked and accepts the loss: it starts, says so, and the payments the
  // deleted WAL held are gone (that is the loss the refusal was about).
  daemon.set_serve_args({"--accept-lost-commits"});
  daemon.start();
  const std::string accepted_log = read_file(daemon.log_path());
  CHECK(accepted_log.find("level=warn event=database.commits_missing_accepted ") != std::string::npos);
  CHECK(field_of(accepted_log, "database.commits_missing_accepted", "database_commit_seq") == database_seq);
  CHECK(missing_payments(daemon, accepted) == static_cast<int>(accepted.size()));
  CHECK(http_request(daemon.port(), "GET", "/readyz").status == 200);

  // From now on the mark follows this database: later starts are ordinary ones.
  daemon.set_serve_args({});
  const std::vector<PaymentRequest> later = accept_payments(daemon, 2, "after-loss");
  daemon.kill9();
  daemon.start();
  CHECK(missing_payments(daemon, later) == 0);
}

TEST_CASE("lost commits: kill -9 with the WAL left alone starts normally, every payment there"
          * doctest::test_suite("sqlite-only")) {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail(8192));
  const std::vector<PaymentRequest> accepted = accept_payments(daemon, 16, "kept");
  daemon.kill9();
  REQUIRE(std::filesystem::file_size(daemon.db_path() + "-wal") > 0);
  daemon.start();
  CHECK(missing_payments(daemon, accepted) == 0);
  CHECK(read_file(daemon.log_path()).find("commits_missing") == std::string::npos);
  // And once more, with what the restart committed since.
  const std::vector<PaymentRequest> more = accept_payments(daemon, 3, "kept-more");
  daemon.kill9();
  daemon.start();
  CHECK(missing_payments(daemon, more) == 0);
  CHECK(read_file(daemon.log_path()).find("commits_missing") == std::string::npos);
}
