#include "daemon/startup.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <string_view>

#include "core/ascii.h"
#include "core/names.h"
#include "store/commit_mark.h"
#include "util/log.h"

namespace payorch::daemon {

std::optional<store::InstanceLock> lock_database(const std::string& path) {
  const char* shared = std::getenv("PAYORCH_TEST_SHARED_DATABASE");
  if (shared != nullptr && std::string_view(shared) == "1") {
    log::warn("database.lock_skipped",
              "PAYORCH_TEST_SHARED_DATABASE=1 (test only): not taking the single-instance lock",
              {{"path", path}});
    return std::nullopt;
  }
  return std::optional<store::InstanceLock>(std::in_place, path);
}

bool commits_intact_or_accepted(const std::string& path, bool accept_lost_commits) {
  const std::string mark = store::commit_mark_path(path);
  const store::CommitMarkCheck check = store::check_commit_mark(path);
  if (!check.database_behind()) return true;
  const std::string figures =
      "database " + path + " holds commits up to number " + std::to_string(check.database_seq) +
      ", but its commit mark " + mark + " says commit number " + std::to_string(*check.mark_seq) +
      " had committed: at least " + std::to_string(*check.mark_seq - check.database_seq) +
      " committed transaction(s), acknowledged payments among them, are not in it (a deleted -wal "
      "file, or an older copy of the database?)";
  const std::initializer_list<log::Field> fields{
      {"path", path},
      {"database_commit_seq", check.database_seq},
      {"mark_commit_seq", *check.mark_seq},
      {"mark", mark}};
  if (!accept_lost_commits) {
    log::error("database.commits_missing",
               figures + "; refusing to start. See \"Lost commits\" in docs/operations.md; once "
                         "you have investigated, start once with --accept-lost-commits",
               fields);
    return false;
  }
  log::warn("database.commits_missing_accepted",
            figures + "; starting anyway (--accept-lost-commits): the commit mark now follows the database",
            fields);
  store::write_commit_mark(mark, check.database_seq);
  return true;
}

void warn_about_slow_drain(const config::Config& cfg) {
  for (const auto& p : cfg.providers)
    if (p.timeouts.connect + p.contract.request_timeout > drain_limit)
      log::warn("drain.limit_short",
                "a vendor call may outlast the SIGTERM drain; keep timeouts.connect + "
                "timeouts.request under 40s",
                {{"provider", p.name}});
  for (const auto& t : cfg.tenants)
    if (t.webhook && t.webhook->timeout > drain_limit)
      log::warn("drain.limit_short",
                "a webhook push may outlast the SIGTERM drain; keep webhook.timeout under 40s",
                {{"tenant", t.id}});
}

void write_port_file(const std::string& path, std::uint16_t port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::string node_id_from_host(std::string_view host) {
  std::string id;
  for (char c : host.substr(0, max_name_length)) {
    c = ascii_lower(c);
    id += is_name_char(c) ? c : '-';
  }
  return id.empty() ? "payorchd" : id;
}

std::string node_id(const config::Engine& engine) {
  if (!engine.node_id.empty()) return engine.node_id;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return node_id_from_host(host);
}

}  // namespace payorch::daemon
