#include "store/database.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "store/migrations.h"
#include "store/sqlite.h"

namespace payorch::store {

OpenReport prepare_database(const std::string& path, UnixMillis now) {
  Db db(path, Db::Mode::read_write_create);
  configure_connection(db, 5000);
  OpenReport r;
  r.migrations_applied = migrate(db, embedded_migrations(), now);
  r.schema_version = schema_version(db);
  auto st = db.prepare("PRAGMA journal_mode");
  st.step();
  if (st.col_text(0) != "wal")
    throw SqliteError(SQLITE_ERROR, path + ": could not switch to WAL mode (got " + st.col_text(0) + ")");
  return r;
}

namespace {

std::string os_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// The pid the holder wrote, or "unknown" (it may not have written it yet).
std::string holder_of(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string pid(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  const bool digits = !pid.empty() && pid.find_first_not_of("0123456789") == std::string::npos;
  return digits ? pid : "unknown";
}

// The pid holding an flock on the file behind `fd`, from /proc/locks (lines such as
// "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF"), or "unknown".
std::string flock_holder(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return "unknown";
  char file[64];
  std::snprintf(file, sizeof file, "%02x:%02x:%llu", ::major(st.st_dev), ::minor(st.st_dev),
                static_cast<unsigned long long>(st.st_ino));
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string number, kind, advisory, mode, pid, where;
    if (fields >> number >> kind >> advisory >> mode >> pid >> where && kind == "FLOCK" && where == file)
      return pid;
  }
  return "unknown";
}

}  // namespace

void InstanceLock::hold_database_file() {
  if (file_fd_ >= 0) return;
  const int fd = ::open(database_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;  // not created yet
    throw std::runtime_error(os_error("cannot open the database file " + database_path_));
  }
  int rc;
  while ((rc = ::flock(fd, LOCK_EX | LOCK_NB)) < 0 && errno == EINTR) {
  }
  if (rc < 0) {
    const bool held = errno == EWOULDBLOCK;
    const std::string message =
        held ? "database " + database_path_ + " is a file another payorchd (pid " + flock_holder(fd) +
                   ") runs on under another name (a hard link or a symbolic link to it); refusing "
                   "to run a second instance on it"
             : os_error("cannot lock the database file " + database_path_);
    ::close(fd);
    if (held) throw DatabaseInUse(message);
    throw std::runtime_error(message);
  }
  file_fd_ = fd;
}

InstanceLock::InstanceLock(const std::string& database_path)
    : database_path_(database_path), path_(database_path + ".lock") {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0) throw std::runtime_error(os_error("cannot open the lock file " + path_));
  int rc;
  while ((rc = ::flock(fd_, LOCK_EX | LOCK_NB)) < 0 && errno == EINTR) {
  }
  if (rc < 0) {
    const bool held = errno == EWOULDBLOCK;
    const std::string message =
        held ? "database " + database_path + " is in use by another payorchd (pid " +
                   holder_of(fd_) + ", lock file " + path_ +
                   "); refusing to run a second instance on it"
             : os_error("cannot lock " + path_);
    ::close(fd_);
    fd_ = -1;
    if (held) throw DatabaseInUse(message);
    throw std::runtime_error(message);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) < 0 ||
      ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const std::string message = os_error("cannot write " + path_);
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(message);
  }
  try {
    hold_database_file();
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

InstanceLock::~InstanceLock() {
  // The database's own descriptor is closed while no connection of this process has the file
  // open (the lock outlives the store): closing a descriptor drops every POSIX lock the
  // process holds on the file, SQLite's included.
  if (file_fd_ >= 0) ::close(file_fd_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace payorch::store
