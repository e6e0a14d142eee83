#pragma once
// A SQLite VFS that wraps the default "unix" VFS and fails chosen I/O operations, for fault
// loops in the style of SQLite's own I/O-error and disk-full tests: fail operation N for
// N = 1, 2, ... until the operation under test completes without reaching N.
//
// install() registers it as the process's default VFS, so every connection opened afterwards
// (payorch's Writer and ReadPool included, with no change to their code) goes through it. While
// disarmed it only passes calls through and counts them.
//
// Counted operations, on every file opened through the VFS (database, -wal, -shm via the
// database file's shm methods, temporary files), each failed with the error the unix VFS itself
// returns when that system call fails:
//   open (xOpen)                       SQLITE_CANTOPEN
//   delete (xDelete)                   SQLITE_IOERR_DELETE
//   access (xAccess)                   SQLITE_IOERR_ACCESS
//   read (xRead)                       SQLITE_IOERR_READ
//   write (xWrite)                     SQLITE_IOERR_WRITE   (SQLITE_FULL in disk-full mode)
//   truncate (xTruncate)               SQLITE_IOERR_TRUNCATE
//   sync (xSync)                       SQLITE_IOERR_FSYNC
//   file_size (xFileSize)              SQLITE_IOERR_FSTAT
//   lock (xLock)                       SQLITE_IOERR_LOCK
//   check_reserved_lock                SQLITE_IOERR_CHECKRESERVEDLOCK
//   shm_map (xShmMap)                  SQLITE_IOERR_SHMMAP
//   shm_lock (xShmLock, taking a lock) SQLITE_IOERR_SHMLOCK
// Not counted: unlocks (xUnlock, xShmLock releasing a lock: SQLite ignores their errors in most
// paths, and failing one would only simulate a lock the kernel never leaks), xClose, xShmUnmap
// and xShmBarrier (their results are ignored or they have none), xFileControl, xSectorSize,
// xDeviceCharacteristics (no I/O), xFetch/xUnfetch (memory mapping, off by default), and the
// VFS's path, time, randomness and dynamic-library methods.
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace payorch::test {

enum class VfsOp {
  open, delete_file, access, read, write, truncate, sync, file_size, lock, check_reserved_lock,
  shm_map, shm_lock,
};
std::string_view to_string(VfsOp op);

// One failure the VFS returned.
struct InjectedFault {
  std::uint64_t seq = 0;  // the operation's number since arming (1-based)
  VfsOp op = VfsOp::read;
  int rc = 0;             // the SQLite result code returned
  std::string file;       // the file's name ("" for temporary files)
};

class FaultyVfs {
public:
  // Registers the VFS as the default (once per process) and returns it. Connections opened
  // before the first call do not go through it.
  static FaultyVfs& install();

  // Each arm_* restarts the operation count at zero and forgets earlier faults.
  // The n-th counted operation from now fails; the others succeed (a transient error).
  void arm_once(std::uint64_t n);
  // The n-th counted operation and every later one fail until disarm() (a dead disk).
  void arm_from(std::uint64_t n);
  // A full disk: writes succeed until `budget_bytes` have been written since now; the write
  // that crosses the budget writes what still fits and returns SQLITE_FULL, as the unix VFS
  // does on ENOSPC, and every later write fails with SQLITE_FULL until disarm(). Nothing else
  // fails.
  void arm_disk_full(std::uint64_t budget_bytes);
  // Only counts from now on (operation count reset to zero).
  void count_only();
  // While on, databases opened are write-protected, as a file this process may not write (chmod
  // a-w, as a user other than root): SQLite opens them read-only, as the unix VFS does when
  // open(O_RDWR) is refused, and every write transaction on them fails with SQLITE_READONLY.
  // Connections already open keep their mode. Independent of arming.
  void write_protect_databases(bool on);
  bool databases_write_protected() const;
  // Stops failing; the counts and the fault list are kept until the next arm_* call.
  void disarm();

  // Counted operations since the last arm_* / count_only call.
  std::uint64_t operations() const;
  // Failures returned since the last arm_* / count_only call.
  std::vector<InjectedFault> faults() const;
  std::uint64_t fault_count() const;
  // The sizes of the writes made since the last arm_* / count_only call, in order (for
  // choosing disk-full budgets: each prefix sum is a budget that fails one more write).
  std::vector<std::uint64_t> write_sizes() const;

  // Called by the VFS methods (not for tests): counts `op` and returns the result code to fail
  // it with, or 0 to let it through. `bytes` is the size of a write (0 otherwise); in disk-full
  // mode `*allowed` receives how many of those bytes may still be written.
  int decide(VfsOp op, std::string_view file, std::uint64_t bytes, std::uint64_t* allowed);

private:
  FaultyVfs() = default;
  enum class Mode { count, once, from, disk_full };
  void rearm(Mode mode, std::uint64_t n);

  mutable std::mutex mu_;
  Mode mode_ = Mode::count;
  bool armed_ = false;
  std::uint64_t target_ = 0;       // once/from: the failing operation; disk_full: the budget
  std::uint64_t operations_ = 0;
  std::uint64_t written_ = 0;      // bytes written since arming (disk-full mode)
  bool write_protected_ = false;
  std::vector<InjectedFault> faults_;
  std::vector<std::uint64_t> write_sizes_;
};

}  // namespace payorch::test
