// Readiness follows the database, not a start-up flag: a database that cannot take a write (a
// full disk, a write-protected file, a write lock held by another process) makes /readyz 503
// with a problem saying why, /status `ready: false` with the storage error, and
// payorch_storage_errors_total count it by kind, while intake answers 503; the first write that
// commits again clears it, and /readyz finds that out by itself (a probe write) when no intake
// comes. A database that cannot be read is 503 on every route, in a detail of payorch's own,
// with what the database said in the log only.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <sqlite3.h>

#include "storage/fault_loop.h"
#include "store/database.h"
#include "support/daemon.h"
#include "support/payorch_api.h"
#include "support/prometheus.h"

using namespace payorch;
using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// A migrated database in a fresh directory, removed at the end; the VFS healthy at both ends.
struct HealthFixture {
  HealthFixture() : dir(storage_temp_dir("payorch-health")), db_path(dir + "/payorch.db") {
    heal();
    store::prepare_database(db_path, 1'700'000'000'000);
    cfg = storage_test_config(db_path);
  }
  ~HealthFixture() {
    heal();
    std::filesystem::remove_all(dir);
  }
  void heal() {
    vfs.disarm();
    vfs.write_protect_databases(false);
  }
  FaultyVfs& vfs = FaultyVfs::install();
  std::string dir;
  std::string db_path;
  config::Config cfg;
};

HttpResponse readyz(std::uint16_t port) { return http_request(port, "GET", "/readyz"); }

boost::json::object status_of(std::uint16_t port) {
  const HttpResponse r = http_request(port, "GET", "/status");
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  return r.json().as_object();
}

double storage_errors(std::uint16_t port, const std::string& kind) {
  const HttpResponse r = http_request(port, "GET", "/metrics");
  REQUIRE_MESSAGE(r.status == 200, r.describe());
  return sum_of(samples_of(r.body), "payorch_storage_errors_total", {"kind=\"" + kind + "\""});
}

// /readyz answers 503 storage-unavailable naming `kind`, and /status agrees.
void check_not_ready(std::uint16_t port, const std::string& kind) {
  const HttpResponse r = readyz(port);
  CHECK_MESSAGE(is_problem(r, 503, "storage-unavailable"), r.describe());
  CHECK(r.header("Retry-After") != "");
  const auto body = r.json().as_object();
  REQUIRE_MESSAGE(body.contains("last_error"), r.describe());
  CHECK(body.at("last_error").at("kind").as_string() == kind);
  CHECK(body.at("detail").as_string().find(kind) != std::string::npos);

  const auto status = status_of(port);
  CHECK(status.at("ready") == false);
  const auto& storage = status.at("storage").as_object();
  CHECK(storage.at("writable") == false);
  REQUIRE(storage.at("last_error").is_object());
  CHECK(storage.at("last_error").at("kind").as_string() == kind);
  CHECK(!storage.at("last_error").at("message").as_string().empty());
  CHECK(storage.at("last_error").at("at").is_string());
}

void check_ready(std::uint16_t port) {
  const HttpResponse r = readyz(port);
  CHECK_MESSAGE(r.status == 200, r.describe());
  const auto status = status_of(port);
  CHECK(status.at("ready") == true);
  CHECK(status.at("storage").at("writable") == true);
  CHECK(status.at("storage").at("last_error").is_null());
}

// Whether `log` has an http.request_failed line for `route`.
bool logged_failure(const std::string& log, const std::string& route) {
  std::size_t at = 0;
  while (at < log.size()) {
    const std::size_t end = std::min(log.find('\n', at), log.size());
    const std::string_view line(log.data() + at, end - at);
    if (line.find("event=http.request_failed") != std::string_view::npos &&
        line.find("route=" + route) != std::string_view::npos)
      return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

TEST_CASE("storage health: a full disk makes the daemon not ready, and a later commit makes it ready") {
  LogCapture logs;
  HealthFixture fx;
  FaultyVfs& vfs = fx.vfs;
  InProcessDaemon daemon(fx.cfg);
  daemon.warm_up();
  INFO("log:\n" << logs.tail());
  check_ready(daemon.port());
  CHECK(storage_errors(daemon.port(), "full") == 0);

  vfs.arm_disk_full(0);
  const PaymentRequest req{.operation_id = unique_operation_id("health-full")};
  const HttpResponse refused = post_payment(daemon.port(), tenant_token, req);
  CHECK_MESSAGE(is_problem(refused, 503, "storage-unavailable"), refused.describe());
  check_not_ready(daemon.port(), "full");
  CHECK(storage_errors(daemon.port(), "full") >= 1);

  // The disk has room again and no intake comes: /readyz finds out with a probe write.
  vfs.disarm();
  CHECK(eventually([&] { return readyz(daemon.port()).status == 200; }, 5s));
  check_ready(daemon.port());
  const HttpResponse accepted = post_payment(daemon.port(), tenant_token, req);
  CHECK_MESSAGE(accepted.status == 201, accepted.describe());
  daemon.stop();
}

TEST_CASE("storage health: a database that cannot be written from the start is not ready before any intake") {
  LogCapture logs;
  HealthFixture fx;
  FaultyVfs& vfs = fx.vfs;
  vfs.write_protect_databases(true);
  InProcessDaemon daemon(fx.cfg);
  INFO("log:\n" << logs.tail());

  // Nothing has been written yet: /readyz checks with a write of its own.
  check_not_ready(daemon.port(), "readonly");
  CHECK(storage_errors(daemon.port(), "readonly") >= 1);
  const HttpResponse refused =
      post_payment(daemon.port(), tenant_token, {.operation_id = unique_operation_id("health-ro")});
  CHECK_MESSAGE(is_problem(refused, 503, "storage-unavailable"), refused.describe());

  // The file's protection is lifted: the writer opens the database again and readiness comes
  // back without a restart.
  vfs.write_protect_databases(false);
  CHECK(eventually([&] { return readyz(daemon.port()).status == 200; }, 5s));
  check_ready(daemon.port());
  daemon.stop();
}

TEST_CASE("storage health: a write lock held by another process past every retry is not ready, and is counted") {
  LogCapture logs;
  HealthFixture fx;
  InProcessDaemon daemon(fx.cfg);
  daemon.warm_up();
  INFO("log:\n" << logs.tail());

  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open_v2(fx.db_path.c_str(), &other, SQLITE_OPEN_READWRITE, "unix") == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  const HttpResponse refused =
      post_payment(daemon.port(), tenant_token, {.operation_id = unique_operation_id("health-busy")});
  CHECK_MESSAGE(is_problem(refused, 503, "storage-busy"), refused.describe());
  check_not_ready(daemon.port(), "busy");
  CHECK(storage_errors(daemon.port(), "busy") >= 1);

  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  CHECK(eventually([&] { return readyz(daemon.port()).status == 200; }, 5s));
  check_ready(daemon.port());
  daemon.stop();
}

TEST_CASE("storage health: a database that cannot be read is 503 everywhere, in the client's words, and logged in its own") {
  LogCapture logs;
  HealthFixture fx;
  FaultyVfs& vfs = fx.vfs;
  InProcessDaemon daemon(fx.cfg);
  daemon.warm_up();
  const PaymentRequest req{.operation_id = unique_operation_id("health-read")};
  const HttpResponse created = post_payment(daemon.port(), tenant_token, req);
  REQUIRE_MESSAGE(created.status == 201, created.describe());

  // Every I/O from now fails: each read transaction starts with a shared-memory lock, so no
  // read gets through, whatever its connection has cached.
  vfs.arm_from(1);
  const std::string tenant_auth = std::string("Bearer ") + tenant_token;
  const std::string admin_auth = std::string("Bearer ") + admin_token;
  struct Probe {
    std::string target;
    std::string authorization;
    std::string route;
  };
  const std::vector<Probe> probes{
      {"/status", "", "/status"},
      {"/metrics", "", "/metrics"},
      {"/v1/payments/" + req.operation_id, tenant_auth, "/v1/payments/{operation_id}"},
      {"/v1/payments?limit=5", tenant_auth, "/v1/payments"},
      {"/v1/events", tenant_auth, "/v1/events"},
      {"/v1/reconciliation?status=open", admin_auth, "/v1/reconciliation"},
  };
  for (const Probe& p : probes) {
    CAPTURE(p.target);
    Headers headers;
    if (!p.authorization.empty()) headers.push_back({"Authorization", p.authorization});
    const HttpResponse r = http_request(daemon.port(), "GET", p.target, headers);
    CHECK_MESSAGE(is_problem(r, 503, "storage-unavailable"), r.describe());
    // What SQLite said stays in the log: no error text, file or statement reaches the client.
    for (const std::string_view secret : {"disk I/O", "SQLITE", "sqlite", "payorch.db", "SELECT", "FROM"})
      CHECK_MESSAGE(r.body.find(secret) == std::string::npos, r.describe());
    CHECK_MESSAGE(logged_failure(logs.tail(400), p.route), logs.tail(40));
  }
  vfs.disarm();
  daemon.stop();
}
