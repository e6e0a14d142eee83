// One payorchd per database file: the lock on "<database>.lock" (flock locks belong to an open
// file description, so two InstanceLocks in one process contend exactly as two processes do).
#include <doctest/doctest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "store/database.h"

namespace payorch::store {
namespace {

struct LockDir {
  LockDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "payorch-lock-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~LockDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

TEST_CASE("instance lock: a second holder is refused with the pid and the lock file") {
  LockDir dir;
  const std::string db = dir.path + "/payorch.db";
  std::optional<InstanceLock> first(std::in_place, db);
  CHECK(first->path() == db + ".lock");
  CHECK(contents(db + ".lock") == std::to_string(::getpid()) + "\n");
  // The lock comes before the database: it never creates or touches the database file.
  CHECK_FALSE(std::filesystem::exists(db));

  const std::string refusal = "database " + db + " is in use by another payorchd (pid " +
                              std::to_string(::getpid()) + ", lock file " + db + ".lock)";
  CHECK_THROWS_WITH_AS(InstanceLock{db}, doctest::Contains(refusal.c_str()), DatabaseInUse);

  // Released with its holder; the next one takes it (the file stays).
  first.reset();
  CHECK(std::filesystem::exists(db + ".lock"));
  InstanceLock second(db);
  CHECK(contents(db + ".lock") == std::to_string(::getpid()) + "\n");
}

TEST_CASE("instance lock: the database file under another name, a hard link or a symlink, is refused") {
  LockDir dir;
  const std::string db = dir.path + "/payorch.db";
  { std::ofstream(db) << "a database"; }
  std::optional<InstanceLock> first(std::in_place, db);

  const std::string linked = dir.path + "/linked.db";
  const std::string symlinked = dir.path + "/symlinked.db";
  REQUIRE(::link(db.c_str(), linked.c_str()) == 0);
  REQUIRE(::symlink(db.c_str(), symlinked.c_str()) == 0);
  const std::string holder = "(pid " + std::to_string(::getpid()) + ")";
  for (const std::string& other : {linked, symlinked}) {
    CAPTURE(other);
    const std::string refusal = "database " + other + " is a file another payorchd " + holder +
                                " runs on under another name (a hard link or a symbolic link to it)";
    CHECK_THROWS_WITH_AS(InstanceLock{other}, doctest::Contains(refusal.c_str()), DatabaseInUse);
    // The refused one released its own lock file: nothing is left held.
    std::optional<InstanceLock> again;
    first.reset();
    again.emplace(other);
    CHECK_THROWS_AS(InstanceLock{db}, DatabaseInUse);
    again.reset();
    first.emplace(db);
  }
}

TEST_CASE("instance lock: a database created after the lock is held once hold_database_file runs") {
  LockDir dir;
  const std::string db = dir.path + "/payorch.db";
  InstanceLock first(db);
  CHECK_FALSE(std::filesystem::exists(db));
  { std::ofstream(db) << "created by the first holder"; }
  const std::string linked = dir.path + "/linked.db";
  REQUIRE(::link(db.c_str(), linked.c_str()) == 0);
  // Not held yet: the file did not exist when the lock was taken.
  std::optional<InstanceLock> early(std::in_place, linked);
  early.reset();
  first.hold_database_file();
  first.hold_database_file();  // once is enough; again is nothing
  CHECK_THROWS_AS(InstanceLock{linked}, DatabaseInUse);
}

TEST_CASE("instance lock: another database is another lock; a missing folder is an error") {
  LockDir dir;
  InstanceLock a(dir.path + "/a.db");
  InstanceLock b(dir.path + "/b.db");
  const std::string problem =
      "cannot open the lock file " + dir.path + "/missing/c.db.lock: No such file or directory";
  CHECK_THROWS_WITH_AS(InstanceLock{dir.path + "/missing/c.db"}, doctest::Contains(problem.c_str()),
                       std::runtime_error);
}

}  // namespace payorch::store
