// `payorchd backup` and `payorchd restore` (docs/operations.md, "Backup and restore") as real
// processes beside a daemon under load: the copy is consistent, holds every payment
// acknowledged before it started, and restores into a database a daemon can serve.
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon.h"
#include "support/payorch_api.h"
#include "support/sqlite_probe.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

// Intakes payments on its own thread until stopped; remembers each 201's payment id and amount.
class IntakeLoop {
public:
  explicit IntakeLoop(std::uint16_t port) : thread_([this, port] { run(port); }) {}
  ~IntakeLoop() { stop(); }

  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // The payments acknowledged (201) so far: payment id -> amount_minor.
  std::map<std::string, std::int64_t> acknowledged() {
    std::lock_guard lock(mutex_);
    return acknowledged_;
  }
  int failures() const { return failures_; }

private:
  void run(std::uint16_t port) {
    for (std::int64_t n = 1; !stopping_; ++n) {
      const PaymentRequest req{.operation_id = unique_operation_id("backup-load"), .amount_minor = 100 + n};
      const HttpResponse r = post_payment(port, acme_token, req);
      if (r.status != 201) {
        ++failures_;
        continue;
      }
      std::lock_guard lock(mutex_);
      acknowledged_[json_string(r.json(), "id")] = req.amount_minor;
    }
  }

  std::atomic<bool> stopping_{false};
  std::atomic<int> failures_{0};
  std::mutex mutex_;
  std::map<std::string, std::int64_t> acknowledged_;
  std::thread thread_;
};

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("backup: a copy taken under load restores with every payment acknowledged before it" *
          doctest::test_suite("sqlite-only")) {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const std::string backup = daemon.dir() + "/backup.db";

  IntakeLoop load(daemon.port());
  REQUIRE(eventually([&] { return load.acknowledged().size() >= 20; }, 10s));
  const std::map<std::string, std::int64_t> before = load.acknowledged();
  const CommandResult taken =
      daemon.run_command({"backup", "--config", daemon.config_path(), "--to", backup, "--json"});
  // The load went on while the backup process ran; some more after it, then stop.
  const std::size_t during = load.acknowledged().size();
  REQUIRE(eventually([&] { return load.acknowledged().size() >= during + 5; }, 10s));
  load.stop();
  REQUIRE_MESSAGE((taken.status.exited && taken.status.code == 0), taken.output);
  CHECK(contains(taken.output, "\"integrity_check\":\"ok\""));
  CHECK(load.failures() == 0);
  CHECK_FALSE(std::filesystem::exists(backup + ".tmp"));
  CHECK((std::filesystem::status(backup).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));

  // A second backup to the same file is refused, and leaves it alone.
  const auto size = std::filesystem::file_size(backup);
  const CommandResult again = daemon.run_command({"backup", "--config", daemon.config_path(), "--to", backup});
  CHECK_MESSAGE((again.status.exited && again.status.code == 1), again.output);
  CHECK(contains(again.output, "already exists"));
  CHECK(std::filesystem::file_size(backup) == size);

  // Restoring while the daemon holds its database is refused.
  const CommandResult busy = daemon.run_command({"restore", "--config", daemon.config_path(), "--from", backup});
  CHECK_MESSAGE((busy.status.exited && busy.status.code == 1), busy.output);
  CHECK(contains(busy.output, "in use by another payorchd"));

  // Into a fresh database of another daemon's configuration.
  Daemon fresh;
  const CommandResult restored =
      fresh.run_command({"restore", "--config", fresh.config_path(), "--from", backup, "--json"});
  REQUIRE_MESSAGE((restored.status.exited && restored.status.code == 0), restored.output);
  CHECK(contains(restored.output, "\"moved_aside\":null"));
  {
    SqliteProbe db(fresh.db_path());
    CHECK(db.integrity_check() == "ok");
    std::map<std::string, std::int64_t> found;
    for (const SqlRow& row : db.query("SELECT id, amount_minor FROM payments WHERE tenant_id = 'acme'"))
      found[row.at("id").value_or("")] = std::stoll(row.at("amount_minor").value_or("0"));
    int missing = 0;
    for (const auto& [id, amount] : before) {
      const auto it = found.find(id);
      if (it == found.end() || it->second != amount) ++missing;
    }
    CHECK(missing == 0);
    CHECK(found.size() >= before.size());
  }
  // The restored copy serves.
  fresh.start();
  CHECK(fresh.run_command({"check-exposure", "--config", fresh.config_path()}).status.code == 0);
}

TEST_CASE("backup: restore keeps the database it replaces, and refuses a damaged backup" *
          doctest::test_suite("sqlite-only")) {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());
  const PaymentRequest kept{.operation_id = unique_operation_id("backup-kept"), .amount_minor = 777};
  REQUIRE(post_payment(daemon.port(), acme_token, kept).status == 201);
  const std::string backup = daemon.dir() + "/backup.db";
  REQUIRE(daemon.run_command({"backup", "--config", daemon.config_path(), "--to", backup}).status.code == 0);
  const PaymentRequest later{.operation_id = unique_operation_id("backup-later"), .amount_minor = 888};
  REQUIRE(post_payment(daemon.port(), acme_token, later).status == 201);
  REQUIRE(daemon.terminate().exited);

  const std::string garbage = daemon.dir() + "/garbage.db";
  std::ofstream(garbage) << "not a database";
  const CommandResult refused = daemon.run_command({"restore", "--config", daemon.config_path(), "--from", garbage});
  CHECK_MESSAGE((refused.status.exited && refused.status.code == 1), refused.output);

  const CommandResult restored = daemon.run_command({"restore", "--config", daemon.config_path(), "--from", backup});
  REQUIRE_MESSAGE((restored.status.exited && restored.status.code == 0), restored.output);
  CHECK(contains(restored.output, "the previous database is kept as " + daemon.db_path() + ".before-restore-"));
  // The copy is older than the database's commit mark: serve refuses it until the operator
  // accepts the lost commits (docs/operations.md, "Backup and restore").
  CHECK(contains(restored.output, "behind the commit mark"));
  const ExitStatus refused_start = daemon.start_expecting_exit();
  CHECK_MESSAGE((refused_start.exited && refused_start.code == 1), refused_start.describe());
  daemon.set_serve_args({"--accept-lost-commits"});
  daemon.start();
  CHECK(get_payment(daemon.port(), acme_token, kept.operation_id).status == 200);
  CHECK(get_payment(daemon.port(), acme_token, later.operation_id).status == 404);
  REQUIRE(daemon.terminate().exited);
  std::string aside;
  for (const auto& entry : std::filesystem::directory_iterator(daemon.dir())) {
    const std::string name = entry.path().string();
    if (contains(name, ".before-restore-") && !name.ends_with("-wal") && !name.ends_with("-shm")) aside = name;
  }
  REQUIRE_FALSE(aside.empty());
  {
    SqliteProbe old_db(aside);
    CHECK(old_db.count("SELECT count(*) FROM payments WHERE operation_id = ?1", {later.operation_id}) == 1);
    SqliteProbe now_db(daemon.db_path());
    CHECK(now_db.count("SELECT count(*) FROM payments WHERE operation_id = ?1", {kept.operation_id}) == 1);
    CHECK(now_db.count("SELECT count(*) FROM payments WHERE operation_id = ?1", {later.operation_id}) == 0);
  }
}
