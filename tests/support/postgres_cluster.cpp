#include "support/postgres_cluster.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "support/log_audit.h"
#include "support/process.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

const std::string script = std::string(PAYORCH_SOURCE_DIR) + "/tools/pg-cluster";

// Runs tools/pg-cluster with `args`; throws std::runtime_error with its output when it fails.
std::string run_script(const std::string& dir, const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{script};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = dir + "/pg-cluster.out";
  ::unlink(log.c_str());
  const CommandResult r = run_to_completion(argv, log, timeout);
  if (!r.status.exited || r.status.code != 0)
    throw std::runtime_error("tools/pg-cluster " + args.front() + " " + r.status.describe() +
                             ": " + r.output);
  return r.output;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The skip: the marker ctest looks for, and why PostgreSQL did not start.
void print_skip(const std::string& why) {
  const std::string message = std::string(postgres_skip_marker) +
                              " (set CI=true to fail instead): PostgreSQL 15 did not start "
                              "(tools/deps installs it): " +
                              why;
  MESSAGE(message);
}

struct Shared {
  std::once_flag once;
  std::unique_ptr<PostgresCluster> cluster;
  std::string why;  // why it did not start
};

Shared& shared() {
  static Shared s;
  return s;
}

}  // namespace

bool in_ci() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  const std::string_view v = ci;
  return !v.empty() && v != "0" && v != "false";
}

PostgresCluster::PostgresCluster() : PostgresCluster("start", {}) {}

std::unique_ptr<PostgresCluster> PostgresCluster::standby_of(const PostgresCluster& primary) {
  return std::unique_ptr<PostgresCluster>(new PostgresCluster("standby", {primary.dir()}));
}

PostgresCluster::PostgresCluster(const std::string& command, const std::vector<std::string>& args)
    : dir_(make_temp_dir("payorch-pg")) {
  try {
    std::vector<std::string> script_args{command, dir_};
    script_args.insert(script_args.end(), args.begin(), args.end());
    script_args.insert(script_args.end(), {"--watch", std::to_string(::getpid())});
    // Initdb (or a base backup) and the first start take a few seconds; a loaded machine
    // needs more.
    run_script(dir_, script_args, 120s);
    base_url_ = trimmed(run_script(dir_, {"url", dir_}, 10s));
    log_audit::register_secret(trimmed(read_file(dir_ + "/password")),
                               "the test PostgreSQL cluster's password");
    admin_.emplace(url("postgres"));
  } catch (...) {
    try {
      run_script(dir_, {"stop", dir_}, 60s);
    } catch (const std::exception&) {
    }
    remove_temp_dir(dir_);
    throw;
  }
}

PostgresCluster::~PostgresCluster() {
  admin_.reset();
  try {
    run_script(dir_, {"stop", dir_}, 60s);
  } catch (const std::exception&) {
    // The watcher stops it once this process has exited.
  }
  remove_temp_dir(dir_);
}

void PostgresCluster::stop_server() {
  const std::lock_guard lock(mu_);
  admin_.reset();
  run_script(dir_, {"stop", dir_}, 60s);
}

void PostgresCluster::start_server() {
  const std::lock_guard lock(mu_);
  run_script(dir_, {"start", dir_}, 120s);
  if (trimmed(run_script(dir_, {"url", dir_}, 10s)) != base_url_)
    throw std::runtime_error("tools/pg-cluster start: the cluster came back on another port");
  admin_.emplace(url("postgres"));
}

void PostgresCluster::kill_server() {
  const std::lock_guard lock(mu_);
  admin_.reset();
  const std::string pid_file = read_file(dir_ + "/data/postmaster.pid");
  const pid_t pid = std::stoi(pid_file.substr(0, pid_file.find('\n')));
  if (::kill(pid, SIGKILL) != 0)
    throw std::runtime_error("kill -9 of the postmaster " + std::to_string(pid) + ": " +
                             std::strerror(errno));
  // Exited: no such process, or a zombie its parent (init) has not reaped yet.
  const auto exited = [pid] {
    if (::kill(pid, 0) != 0) return true;
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t comm_end = stat.rfind(')');
    return comm_end != std::string::npos && stat.compare(comm_end, 3, ") Z") == 0;
  };
  if (!eventually(exited, 10s))
    throw std::runtime_error("the postmaster " + std::to_string(pid) + " did not exit after kill -9");
}

void PostgresCluster::promote() {
  const std::lock_guard lock(mu_);
  admin_.reset();
  run_script(dir_, {"promote", dir_}, 120s);
  admin_.emplace(url("postgres"));
}

std::string PostgresCluster::url(const std::string& database) const {
  return base_url_.substr(0, base_url_.rfind('/') + 1) + database;
}

std::string PostgresCluster::host_port() const {
  const std::size_t at = base_url_.rfind('@') + 1;
  return base_url_.substr(at, base_url_.find('/', at) - at);
}

std::string multi_host_url(const std::vector<const PostgresCluster*>& servers,
                           const std::string& database, const std::string& options) {
  const std::string first = servers.at(0)->url(database);
  std::string out = first.substr(0, first.rfind('@') + 1);
  for (std::size_t i = 0; i < servers.size(); ++i) out += (i == 0 ? "" : ",") + servers[i]->host_port();
  return out + "/" + database + (options.empty() ? "" : "?" + options);
}

store::pg::Result PostgresCluster::admin(const std::string& sql,
                                         std::initializer_list<store::pg::Param> params) {
  const std::lock_guard lock(mu_);
  if (!admin_->ok()) admin_.emplace(url("postgres"));
  return admin_->exec(sql, params);
}

std::string PostgresCluster::create_database() {
  std::string name;
  {
    const std::lock_guard lock(mu_);
    name = "test_" + std::to_string(++databases_);
  }
  // Names are ours ([a-z0-9_]): CREATE DATABASE takes no parameters.
  admin("CREATE DATABASE " + name + " TEMPLATE template0");
  return name;
}

void PostgresCluster::drop_database(const std::string& name) {
  admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
}

PostgresCluster* shared_postgres(std::string* why) {
  Shared& s = shared();
  std::call_once(s.once, [&] {
    try {
      s.cluster = std::make_unique<PostgresCluster>();
    } catch (const std::exception& e) {
      s.why = e.what();
    }
  });
  if (s.cluster) return s.cluster.get();
  if (in_ci()) FAIL("PostgreSQL did not start, and with CI set that fails the test: " << s.why);
  if (why != nullptr) *why = s.why;
  return nullptr;
}

PostgresDatabase::PostgresDatabase(PostgresCluster& cluster)
    : cluster_(cluster), name_(cluster.create_database()), url_(cluster.url(name_)) {}

PostgresDatabase::~PostgresDatabase() {
  try {
    cluster_.drop_database(name_);
  } catch (const std::exception&) {
    // Left for the cluster's removal.
  }
}

std::unique_ptr<PostgresDatabase> postgres_database_or_skip() {
  std::string why;
  PostgresCluster* cluster = shared_postgres(&why);
  if (cluster == nullptr) {
    print_skip(why);
    return nullptr;
  }
  return std::make_unique<PostgresDatabase>(*cluster);
}

std::optional<ReplicatedPostgres> replicated_postgres_or_skip() {
  std::string why;
  try {
    ReplicatedPostgres servers;
    servers.primary = std::make_unique<PostgresCluster>();
    servers.standby = PostgresCluster::standby_of(*servers.primary);
    return servers;
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (in_ci()) FAIL("PostgreSQL did not start, and with CI set that fails the test: " << why);
  print_skip(why);
  return std::nullopt;
}

}  // namespace payorch::test
