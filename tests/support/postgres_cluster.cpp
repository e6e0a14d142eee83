#include "support/postgres_cluster.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "support/log_audit.h"
#include "support/process.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

const std::string script = std::string(PAYORCH_SOURCE_DIR) + "/tools/pg-cluster";

// CI=true (any value but empty, 0 or false): PostgreSQL must start there.
bool in_ci() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  const std::string_view v = ci;
  return !v.empty() && v != "0" && v != "false";
}

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

PostgresCluster::PostgresCluster() : dir_(make_temp_dir("payorch-pg")) {
  try {
    // Initdb and the first start take a few seconds; a loaded machine needs more.
    run_script(dir_, {"start", dir_, "--watch", std::to_string(::getpid())}, 120s);
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

std::string PostgresCluster::url(const std::string& database) const {
  return base_url_.substr(0, base_url_.rfind('/') + 1) + database;
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
    const std::string message = std::string(postgres_skip_marker) +
                                " (set CI=true to fail instead): PostgreSQL 15 did not start "
                                "(tools/deps installs it): " +
                                why;
    MESSAGE(message);
    return nullptr;
  }
  return std::make_unique<PostgresDatabase>(*cluster);
}

}  // namespace payorch::test
