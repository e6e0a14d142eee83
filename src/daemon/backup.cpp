#include "daemon/backup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/clock.h"
#include "daemon/serving_store.h"
#include "store/commit_mark.h"
#include "store/commit_sequence.h"
#include "store/database.h"
#include "store/migrations.h"
#include "store/sqlite.h"
#include "util/system_clock.h"

namespace payorch::daemon {
namespace {

namespace fs = std::filesystem;

constexpr int busy_timeout_ms = 5000;
// sqlite3_backup_step answers BUSY/LOCKED while another connection holds a lock the copy
// needs (a checkpoint truncating the WAL, a writer mid-COMMIT on a rollback-journal file).
constexpr int busy_attempts = 100;
constexpr auto busy_pause = std::chrono::milliseconds(50);

int not_for_postgres(const char* command) {
  std::fprintf(stderr,
               "payorchd %s: the database driver is postgres; use PostgreSQL's own tools "
               "(pg_dump, pg_basebackup: docs/postgres.md)\n",
               command);
  return 2;
}

std::string os_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// fsync of a file, or of a directory after a rename in it.
void sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(os_error("cannot open " + path));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc < 0) throw std::runtime_error(os_error("cannot fsync " + path));
}

std::string parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// PRAGMA integrity_check's answer: "ok", or its first complaints.
std::string integrity(store::Db& db) {
  auto st = db.prepare("PRAGMA integrity_check(10)");
  std::string out;
  while (st.step()) out += (out.empty() ? "" : "; ") + st.col_text(0);
  return out;
}

// What a database holds, for the summaries.
struct Contents {
  int schema_version = 0;
  std::uint64_t commit_sequence = 0;
  std::int64_t payments = 0;  // refund rows not counted
};

Contents contents(store::Db& db) {
  Contents c;
  c.schema_version = store::schema_version(db);
  c.commit_sequence = store::read_commit_sequence(db);
  auto st = db.prepare("SELECT count(*) FROM payments WHERE operation_type <> 'refund'");
  st.step();
  c.payments = st.col_int(0);
  return c;
}

// A copy of `source` in `tmp`, from one read transaction on it: sqlite3_backup_step(-1) copies
// every page under a single read lock, a WAL snapshot that the daemon's commits do not disturb.
// (Copying in several steps would restart the copy after each commit of the daemon, which under
// a steady load may never finish.)
void copy_database(store::Db& source, store::Db& target) {
  sqlite3_backup* backup = sqlite3_backup_init(target.handle(), "main", source.handle(), "main");
  if (!backup) target.fail(sqlite3_errcode(target.handle()), "backup");
  int rc = SQLITE_OK;
  for (int attempt = 0; attempt < busy_attempts; ++attempt) {
    rc = sqlite3_backup_step(backup, -1);
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
    std::this_thread::sleep_for(busy_pause);
  }
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
      throw store::SqliteError(rc, "backup: the database stayed locked; try again");
    target.fail(rc, "backup");
  }
}

struct BackupResult {
  Contents contents;
  std::uintmax_t bytes = 0;
};

BackupResult write_backup(const std::string& database, const std::string& to) {
  const std::string tmp = to + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);  // an earlier, interrupted backup's
  BackupResult r;
  try {
    store::Db source(database, store::Db::Mode::read_only);
    sqlite3_busy_timeout(source.handle(), busy_timeout_ms);
    store::Db target(tmp, store::Db::Mode::read_write_create);
    // As private as the database: it holds the same payment records.
    if (::chmod(tmp.c_str(), 0600) < 0) throw std::runtime_error(os_error("cannot chmod " + tmp));
    copy_database(source, target);
    // One self-contained file: no -wal beside it to lose when it is copied around.
    auto mode = target.prepare("PRAGMA journal_mode=DELETE");
    mode.step();
    if (mode.col_text(0) != "delete")
      throw std::runtime_error("cannot switch " + tmp + " out of WAL mode (got " + mode.col_text(0) + ")");
    const std::string check = integrity(target);
    if (check != "ok") throw std::runtime_error("the copy fails integrity_check: " + check);
    r.contents = contents(target);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  sync_path(tmp, false);
  if (fs::exists(to)) {
    fs::remove(tmp, ec);
    throw std::runtime_error(to + " appeared while the backup ran; not replacing it");
  }
  fs::rename(tmp, to);
  sync_path(parent_of(to), true);
  r.bytes = fs::file_size(to);
  return r;
}

// "20261203T014500Z"
std::string utc_stamp(UnixMillis now) {
  std::string out;
  for (char c : format_rfc3339(now)) {
    if (c == '.') break;
    if (c != '-' && c != ':' && c != 'Z') out += c;
  }
  return out + "Z";
}

std::string json_or_text(bool json, const boost::json::object& o, const std::string& text) {
  return json ? boost::json::serialize(o) + "\n" : text;
}

}  // namespace

int backup_database(const config::Config& cfg, const std::string& to, bool json) {
  if (cfg.database.driver == "postgres") return not_for_postgres("backup");
  const std::string& database = cfg.database.path;
  try {
    if (fs::exists(to)) {
      std::fprintf(stderr, "payorchd backup: %s already exists; refusing to overwrite it\n", to.c_str());
      return 1;
    }
    const BackupResult r = write_backup(database, to);
    const boost::json::object o{{"database", database},
                                {"backup", to},
                                {"bytes", r.bytes},
                                {"schema_version", r.contents.schema_version},
                                {"commit_sequence", r.contents.commit_sequence},
                                {"payments", r.contents.payments},
                                {"integrity_check", "ok"}};
    const std::string text =
        to + ": backup of " + database + " (" + std::to_string(r.bytes) + " bytes, schema version " +
        std::to_string(r.contents.schema_version) + ", commit sequence " +
        std::to_string(r.contents.commit_sequence) + ", " + std::to_string(r.contents.payments) +
        " payment(s)); integrity_check ok\n";
    std::fputs(json_or_text(json, o, text).c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payorchd backup: %s\n", e.what());
    return 1;
  }
}

int restore_database(const config::Config& cfg, const std::string& from, bool json) {
  if (cfg.database.driver == "postgres") return not_for_postgres("restore");
  const std::string& database = cfg.database.path;
  try {
    // Always the lock, test or not: replacing a database under a running daemon loses whatever
    // it writes next.
    store::InstanceLock lock(database);
    if (!fs::is_regular_file(from)) {
      std::fprintf(stderr, "payorchd restore: %s is not a file\n", from.c_str());
      return 1;
    }
    Contents restored;
    {
      store::Db backup(from, store::Db::Mode::read_only);
      const std::string check = integrity(backup);
      if (check != "ok") {
        std::fprintf(stderr, "payorchd restore: %s fails integrity_check: %s\n", from.c_str(), check.c_str());
        return 1;
      }
      restored = contents(backup);
      store::refuse_newer_schema(restored.schema_version, store::embedded_migrations());
    }

    // The current database, kept under another name with its -wal and -shm (the -wal may hold
    // its last commits).
    std::optional<std::string> aside;
    struct stat old_stat {};
    const bool had_database = ::stat(database.c_str(), &old_stat) == 0;
    if (had_database) {
      aside = database + ".before-restore-" + utc_stamp(SystemClock().now_ms());
      for (const char* suffix : {"", "-wal", "-shm"})
        if (fs::exists(*aside + suffix))
          throw std::runtime_error(*aside + suffix + " already exists; try again in a second");
      for (const char* suffix : {"", "-wal", "-shm"})
        if (fs::exists(database + suffix)) fs::rename(database + suffix, *aside + suffix);
    }
    const std::string tmp = database + ".restore-tmp";
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
    if (had_database) {
      // The daemon's user keeps owning its database when root restores it.
      if (::chown(tmp.c_str(), old_stat.st_uid, old_stat.st_gid) < 0 && ::geteuid() == 0)
        throw std::runtime_error(os_error("cannot chown " + tmp));
      ::chmod(tmp.c_str(), old_stat.st_mode & 07777);
    } else {
      ::chmod(tmp.c_str(), 0600);
    }
    sync_path(tmp, false);
    fs::rename(tmp, database);
    sync_path(parent_of(database), true);

    const store::CommitMarkCheck mark = store::check_commit_mark(database);
    boost::json::object o{{"database", database},
                          {"restored_from", from},
                          {"moved_aside", aside ? boost::json::value(*aside) : nullptr},
                          {"schema_version", restored.schema_version},
                          {"commit_sequence", restored.commit_sequence},
                          {"payments", restored.payments},
                          {"commit_mark", mark.mark_seq ? boost::json::value(*mark.mark_seq) : nullptr},
                          {"behind_commit_mark", mark.database_behind()}};
    std::string text = database + ": restored from " + from + " (schema version " +
                       std::to_string(restored.schema_version) + ", commit sequence " +
                       std::to_string(restored.commit_sequence) + ", " +
                       std::to_string(restored.payments) + " payment(s))\n";
    if (aside) text += "the previous database is kept as " + *aside + "\n";
    if (mark.database_behind())
      text += "the restored copy is behind the commit mark (" + std::to_string(restored.commit_sequence) +
              " < " + std::to_string(*mark.mark_seq) +
              "): start once with `payorchd serve --accept-lost-commits`, then import the vendors' "
              "settlement files (docs/operations.md, \"Backup and restore\")\n";
    std::fputs(json_or_text(json, o, text).c_str(), stdout);
    return 0;
  } catch (const store::DatabaseInUse& e) {
    std::fprintf(stderr, "payorchd restore: %s; stop it first\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payorchd restore: %s\n", e.what());
    return 1;
  }
}

}  // namespace payorch::daemon
