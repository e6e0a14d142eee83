#include "store/commit_mark.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <stdexcept>

namespace payorch::store {
namespace {

std::string os_error(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

std::string commit_mark_path(const std::string& database_path) { return database_path + ".commit-mark"; }

std::optional<std::uint64_t> read_commit_mark(const std::string& mark_path) {
  const int fd = ::open(mark_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw std::runtime_error(os_error("cannot read the commit mark " + mark_path));
  }
  char buf[32];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  const std::string error = n < 0 ? os_error("cannot read the commit mark " + mark_path) : "";
  ::close(fd);
  if (!error.empty()) throw std::runtime_error(error);
  std::string_view s(buf, static_cast<std::size_t>(n));
  if (s.ends_with('\n')) s.remove_suffix(1);
  std::uint64_t seq = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), seq);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
    throw std::runtime_error("the commit mark " + mark_path + " does not hold a commit sequence number");
  return seq;
}

void write_commit_mark(const std::string& mark_path, std::uint64_t seq) {
  const std::string tmp = mark_path + ".tmp." + std::to_string(::getpid());
  const std::string text = std::to_string(seq) + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw std::runtime_error(os_error("cannot create " + tmp));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  // Durable before it replaces the old mark: a crash must never leave an empty mark behind.
  const bool synced = written && ::fsync(fd) == 0;
  const std::string error = written && synced ? "" : os_error("cannot write " + tmp);
  ::close(fd);
  if (error.empty() && ::rename(tmp.c_str(), mark_path.c_str()) == 0) return;
  const std::string message = error.empty() ? os_error("cannot rename " + tmp + " to " + mark_path) : error;
  ::unlink(tmp.c_str());
  throw std::runtime_error(message);
}

CommitMarkCheck check_commit_mark(const std::string& database_path) {
  CommitMarkCheck check;
  check.mark_seq = read_commit_mark(commit_mark_path(database_path));
  Db db(database_path, Db::Mode::read_write);  // reads only; read_write lets SQLite replay a WAL
  check.database_seq = read_commit_sequence(db);
  return check;
}

}  // namespace payorch::store
