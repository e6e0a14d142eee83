#include "support/daemon.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "support/log_audit.h"
#include "support/postgres_cluster.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

// Variables a test run may have inherited that would change how payorchd behaves.
constexpr std::string_view never_inherited[] = {
    "PAYORCH_FAILPOINTS", "PAYORCH_TEST_SHARED_DATABASE", "NOTIFY_SOCKET", "WATCHDOG_USEC",
    "WATCHDOG_PID",       "LISTEN_FDS",   "LISTEN_PID",    "LISTEN_FDNAMES",
    "CREDENTIALS_DIRECTORY"};

void append_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << text;
}

// PAYORCH_TEST_PAYORCHD runs the suite against another binary (an installed payorchd, or a
// wrapper that breaks it on purpose to check that the tests can fail).
std::string payorchd_path() {
  const char* override_path = std::getenv("PAYORCH_TEST_PAYORCHD");
  return override_path && *override_path ? override_path : PAYORCHD_PATH;
}

std::string join(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

// `text` with every "{dir}" replaced by `dir`.
std::string with_dir(std::string text, const std::string& dir) {
  for (std::size_t at = text.find("{dir}"); at != std::string::npos;
       at = text.find("{dir}", at + dir.size()))
    text.replace(at, 5, dir);
  return text;
}

}  // namespace

std::string DaemonConfig::render(const std::string& dir) const {
  std::string text;
  for (const std::string* section :
       {&server, &database, &admin, &tenants, &providers, &routing, &engine, &extra}) {
    if (section->empty()) continue;
    text += *section;
    if (text.back() != '\n') text += '\n';
  }
  return with_dir(std::move(text), dir);
}

TestDriver test_driver() {
  const char* driver = std::getenv("PAYORCH_TEST_DRIVER");
  if (driver == nullptr || *driver == '\0' || std::string_view(driver) == "sqlite")
    return TestDriver::sqlite;
  if (std::string_view(driver) == "postgres") return TestDriver::postgres;
  throw std::runtime_error("PAYORCH_TEST_DRIVER must be sqlite or postgres, not '" +
                           std::string(driver) + "'");
}

std::string default_database_section() { return DaemonConfig{}.database; }

std::string tls_server_section(const std::string& listen) {
  return "server: {listen: \"" + listen + "\", tls: {cert_file: tls/server.crt, key_file: tls/server.key}}";
}

void write_tls_files(const std::string& dir, const std::string& cert_pem, const std::string& key_pem) {
  write_file(dir + "/tls/server.crt", cert_pem);
  write_file(dir + "/tls/server.key", key_pem);
}

std::size_t open_fds(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

Daemon::Daemon(DaemonConfig config) {
  if (test_driver() == TestDriver::postgres && config.database == default_database_section()) {
    std::string why;
    PostgresCluster* cluster = shared_postgres(&why);
    if (cluster == nullptr) {
      MESSAGE(postgres_skip_marker << " (set CI=true to fail instead): " << why);
      throw std::runtime_error("PostgreSQL did not start: " + why);
    }
    postgres_ = std::make_unique<PostgresDatabase>(*cluster);
  }
  dir_ = make_temp_dir("payorch-it");
  if (postgres_) {
    // The URI in a file, as production keeps it (a file or a systemd credential).
    write_file(dir_ + "/database-url", postgres_->url() + "\n");
    config.database = "database: {driver: postgres, url_file: \"" + dir_ +
                      "/database-url\", pool_size: 4}";
  }
  database_section_ = with_dir(config.database, dir_);
  write_file(config_path(), config.render(dir_));
}

std::string Daemon::database_url() const { return postgres_ ? postgres_->url() : ""; }

Daemon::~Daemon() {
  process_.kill9();
  log_audit::audit_logs(dir_);  // secrets in any log fail the run at exit
  remove_temp_dir(dir_);
}

void Daemon::set_env(const std::string& name, std::optional<std::string> value) {
  env_overrides_[name] = std::move(value);
}

std::vector<std::string> Daemon::environment() const {
  std::vector<std::string_view> dropped(std::begin(never_inherited), std::end(never_inherited));
  for (const auto& [name, value] : env_overrides_) dropped.push_back(name);
  std::vector<std::string> env = environment_without(dropped);
  for (const auto& [name, value] : env_overrides_)
    if (value) env.push_back(name + "=" + *value);
  return env;
}

std::vector<std::string> Daemon::argv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{payorchd_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

void Daemon::spawn_serve(const std::string& note) {
  ::unlink(port_file().c_str());
  port_ = 0;
  std::vector<std::string> args{"serve", "--config", config_path(), "--port-file", port_file()};
  args.insert(args.end(), serve_args_.begin(), serve_args_.end());
  append_file(log_path(), "==== harness: start " + std::to_string(++starts_) + note +
                              ": payorchd " + join(args) + " ====\n");
  const std::vector<std::string> env = environment();
  process_.spawn(argv(args), log_path(), &env);
}

void Daemon::start(std::chrono::milliseconds timeout) {
  if (process_.pid() > 0) throw std::logic_error("Daemon::start: already running");
  spawn_serve("");
  const PortWait wait = wait_for_port_file(process_, port_file(), timeout);
  if (wait.exited)
    throw std::runtime_error("payorchd " + wait.exited->describe() +
                             " before listening; log tail:\n" + log_tail());
  if (wait.port == 0) {
    kill9();
    throw std::runtime_error("payorchd wrote no port file within " +
                             std::to_string(timeout.count()) + " ms; log tail:\n" + log_tail());
  }
  port_ = wait.port;
}

ExitStatus Daemon::start_expecting_exit(std::chrono::milliseconds timeout) {
  if (process_.pid() > 0) throw std::logic_error("Daemon::start_expecting_exit: already running");
  spawn_serve(" (expecting refusal)");
  std::optional<ExitStatus> status = wait_exit(timeout);
  if (!status) {
    const bool listening = !read_file(port_file()).empty();
    kill9();
    throw std::runtime_error(std::string("payorchd did not refuse to start: ") +
                             (listening ? "it wrote its port file" : "still running") +
                             "; log tail:\n" + log_tail());
  }
  return *status;
}

void Daemon::kill9() { process_.kill9(); }

ExitStatus Daemon::terminate(std::chrono::milliseconds timeout) {
  if (process_.pid() <= 0) throw std::logic_error("Daemon::terminate: not running");
  return process_.terminate(timeout);
}

void Daemon::restart(std::chrono::milliseconds timeout) {
  kill9();
  start(timeout);
}

std::optional<ExitStatus> Daemon::wait_exit(std::chrono::milliseconds timeout) {
  if (process_.pid() <= 0) throw std::logic_error("Daemon::wait_exit: not running");
  return process_.wait_exit(timeout);
}

bool Daemon::running() { return process_.running(); }

CommandResult Daemon::run_command(const std::vector<std::string>& args,
                                  std::chrono::milliseconds timeout) {
  const std::string output_path = dir_ + "/command-" + std::to_string(++commands_) + ".log";
  const std::vector<std::string> env = environment();
  return run_to_completion(argv(args), output_path, timeout, &env);
}

std::string Daemon::log_tail(std::size_t max_bytes) const {
  return file_tail(log_path(), max_bytes);
}

}  // namespace payorch::test
