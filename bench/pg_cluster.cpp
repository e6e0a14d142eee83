#include "bench/pg_cluster.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

#include "store/postgres/connection.h"
#include "support/process.h"

namespace payorch::bench {
namespace {

using namespace std::chrono_literals;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

constexpr const char* durability_query =
    "SELECT string_agg(name || ' ' || setting, ', ' ORDER BY name) FROM pg_settings "
    "WHERE name IN ('fsync', 'full_page_writes', 'synchronous_commit')";
constexpr const char* durable_settings = "fsync on, full_page_writes on, synchronous_commit on";

}  // namespace

std::string with_host_port(const std::string& url, const std::string& host_port) {
  const std::size_t at = url.find('@');
  const std::size_t slash = url.find('/', at == std::string::npos ? 0 : at);
  if (at == std::string::npos || slash == std::string::npos)
    throw std::invalid_argument("no user@host:port/ in the database URI");
  return url.substr(0, at + 1) + host_port + url.substr(slash);
}

BenchCluster::BenchCluster(const std::string& script, const std::string& parent, bool durable,
                           ClusterPlacement placement)
    : script_(script), dir_(test::make_temp_dir("payorch-bench-pg", parent)), log_(dir_ + ".log"),
      placement_(std::move(placement)) {
  try {
    run({"start", dir_, "--watch", std::to_string(::getpid())});
    base_url_ = trimmed(run({"url", dir_}));
    server_port_ = static_cast<std::uint16_t>(std::atoi(trimmed(test::read_file(dir_ + "/port")).c_str()));
    if (placement_.reach) base_url_ = with_host_port(base_url_, placement_.reach(server_port_));
    if (durable) {
      store::pg::Connection admin(url("postgres"));
      for (const char* setting : {"fsync", "full_page_writes", "synchronous_commit"})
        admin.exec(std::string("ALTER SYSTEM SET ") + setting + " = on");
      admin.exec("SELECT pg_reload_conf()");
      // The reload reaches each backend at its next command: ask new sessions until they see it.
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (durability() != durable_settings) {
        if (std::chrono::steady_clock::now() >= deadline)
          throw std::runtime_error("the server did not take the durable settings: " + durability());
        std::this_thread::sleep_for(20ms);
      }
    }
  } catch (const std::exception& e) {
    try {
      run({"stop", dir_, "--remove"});
    } catch (const std::exception&) {
      // The watcher removes it once this process has exited.
    }
    ::unlink(log_.c_str());
    throw PostgresUnavailable(std::string(postgres_unavailable_marker) + ": " + e.what());
  }
}

BenchCluster::~BenchCluster() {
  try {
    run({"stop", dir_, "--remove"});
  } catch (const std::exception&) {
    // The watcher stops it and removes the folder once this process has exited.
  }
  ::unlink(log_.c_str());
}

std::string BenchCluster::run(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = placement_.prefix;
  argv.push_back(script_);
  argv.insert(argv.end(), args.begin(), args.end());
  ::unlink(log_.c_str());
  // initdb and the first start take a few seconds; a loaded machine needs more.
  const test::CommandResult r = test::run_to_completion(argv, log_, 120s);
  if (!r.status.exited || r.status.code != 0)
    throw std::runtime_error("tools/pg-cluster " + args.front() + " " + r.status.describe() + ": " +
                             trimmed(r.output));
  return r.output;
}

std::string BenchCluster::url(const std::string& database) const {
  return base_url_.substr(0, base_url_.rfind('/') + 1) + database;
}

std::string BenchCluster::create_database(const std::string& name) {
  store::pg::Connection admin(url("postgres"));
  admin.exec("CREATE DATABASE " + name + " TEMPLATE template0");
  return url(name);
}

std::string BenchCluster::password() const {
  return trimmed(test::read_file(dir_ + "/password"));
}

pid_t BenchCluster::postmaster_pid() const {
  // postmaster.pid's first line is the pid.
  return static_cast<pid_t>(std::atol(test::read_file(dir_ + "/data/postmaster.pid").c_str()));
}

std::string BenchCluster::durability() const {
  store::pg::Connection admin(url("postgres"));
  return admin.exec(durability_query).text(0, 0);
}

}  // namespace payorch::bench
