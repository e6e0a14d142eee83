// support/faulty_vfs itself: it sits under every connection, counts, and fails exactly what it
// was armed to fail, with the error matching the operation.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "storage/fault_loop.h"

using namespace payorch::test;

namespace {

struct ScratchDb {
  ScratchDb() {
    FaultyVfs::install();
    dir = storage_temp_dir("payorch-vfs");
    path = dir + "/scratch.db";
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) == SQLITE_OK);
    sqlite3_extended_result_codes(db, 1);
    REQUIRE(exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (x TEXT)") == SQLITE_OK);
  }
  ~ScratchDb() {
    FaultyVfs::install().disarm();
    sqlite3_close(db);
    std::filesystem::remove_all(dir);
  }
  int exec(const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }
  int insert() { return exec("INSERT INTO t VALUES (randomblob(3000))"); }
  std::string dir, path;
  sqlite3* db = nullptr;
};

}  // namespace

TEST_CASE("the faulty VFS is the default and counts every I/O of a write") {
  ScratchDb s;
  CHECK(std::string(sqlite3_vfs_find(nullptr)->zName) == "payorch-faulty");
  FaultyVfs& vfs = FaultyVfs::install();
  vfs.count_only();
  REQUIRE(s.insert() == SQLITE_OK);
  CHECK(vfs.operations() > 3);   // at least: lock, write frames, sync
  CHECK(!vfs.write_sizes().empty());
  CHECK(vfs.fault_count() == 0);
}

TEST_CASE("arm_once fails one operation with its own error; later ones succeed") {
  ScratchDb s;
  FaultyVfs& vfs = FaultyVfs::install();
  // Fail each operation of an insert in turn: the first failure is the one reported.
  for (std::uint64_t n = 1;; ++n) {
    vfs.arm_once(n);
    const int rc = s.insert();
    vfs.disarm();
    const auto faults = vfs.faults();
    if (faults.empty()) {
      CHECK(rc == SQLITE_OK);
      break;
    }
    REQUIRE(faults.size() == 1);
    CHECK(faults[0].seq == n);
    if (faults[0].op == VfsOp::write) CHECK(faults[0].rc == SQLITE_IOERR_WRITE);
    if (faults[0].op == VfsOp::sync) CHECK(faults[0].rc == SQLITE_IOERR_FSYNC);
    if (faults[0].op == VfsOp::read) CHECK(faults[0].rc == SQLITE_IOERR_READ);
    REQUIRE(n < 500);
  }
  CHECK(s.insert() == SQLITE_OK);
}

TEST_CASE("arm_from fails everything until disarmed; disk full fails writes only") {
  ScratchDb s;
  FaultyVfs& vfs = FaultyVfs::install();
  vfs.arm_from(1);
  CHECK(s.insert() != SQLITE_OK);
  CHECK(s.insert() != SQLITE_OK);
  CHECK(vfs.fault_count() >= 2);
  vfs.disarm();
  CHECK(s.insert() == SQLITE_OK);

  vfs.arm_disk_full(0);
  CHECK((s.insert() & 0xff) == SQLITE_FULL);
  for (const auto& f : vfs.faults()) {
    CHECK(f.op == VfsOp::write);
    CHECK(f.rc == SQLITE_FULL);
  }
  vfs.disarm();
  CHECK(s.insert() == SQLITE_OK);
}
