// Readiness follows the database, not a start-up flag: a database that cannot take a write (a
// full disk, a write-protected file, a write lock held by another process) makes /readyz 503
// with a problem saying why, /status `ready: false` with the storage error, and
// payorch_storage_errors_total count it by kind, while intake answers 503; the first write that
// commits again clears it, and /readyz finds that out by itself (a probe write) when no intake
// comes.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>

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
