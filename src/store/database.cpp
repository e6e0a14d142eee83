#include "store/database.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

InstanceLock::InstanceLock(const std::string& database_path) : path_(database_path + ".lock") {
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
}

InstanceLock::~InstanceLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace payorch::store
