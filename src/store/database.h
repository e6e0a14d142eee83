#pragma once
// Opening the database for the daemon: create the file if needed, set WAL + synchronous=FULL,
// apply migrations (refusing a schema newer than this binary); and the lock that keeps a second
// payorchd off the same file.
#include <stdexcept>
#include <string>

#include "core/clock.h"
#include "store/schema_version.h"

namespace payorch::store {

// Creates parent-less files only: the directory must exist. Throws with a clear message.
OpenReport prepare_database(const std::string& path, UnixMillis now);

// Thrown by InstanceLock when another process holds the database; what() names the database,
// the holder's pid and the lock file.
class DatabaseInUse : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// One payorchd per database file: an exclusive flock(2) on "<database path>.lock", taken before
// the database is opened and held for the lifetime of the object (the process: the kernel drops
// it when the process dies, kill -9 included, so a crash never leaves a stale lock). The holder
// writes its pid into the file so that a refused start can say who holds it. The lock file is
// never deleted: removing it would let a third process lock a new file while the first still
// holds the old one.
//
// The path names the lock file, so the database file itself is locked too (an exclusive flock
// on its inode, through a descriptor held as long as the lock): the same file reached by
// another path, a hard link or a symbolic link, is refused as well. Two daemons on one file
// under two names would each keep their own -wal beside it, and each would miss what the other
// wrote. A database that does not exist yet is locked by hold_database_file() once created.
//
// Two daemons on one file are safe for the data (leases and fences, docs/contract.md §3), but the second
// one's claims, drains and metrics would compete with the first's; the lock turns that
// operator mistake into a clear refusal.
class InstanceLock {
public:
  // Throws DatabaseInUse when another process holds the lock, std::runtime_error when the lock
  // file cannot be created or locked (e.g. the folder does not exist).
  explicit InstanceLock(const std::string& database_path);
  ~InstanceLock();
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;

  const std::string& path() const { return path_; }

  // Locks the database file itself, if it exists and is not locked by this object yet (the
  // constructor calls it; call it again once the database was created). Throws DatabaseInUse
  // when another process holds the file under any of its names.
  void hold_database_file();

private:
  std::string database_path_;
  std::string path_;
  int fd_ = -1;
  int file_fd_ = -1;  // the database file's, once held
};

}  // namespace payorch::store
