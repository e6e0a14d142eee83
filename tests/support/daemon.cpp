#include "support/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/log_audit.h"

extern char** environ;

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

// Variables a test run may have inherited that would change how payorchd behaves.
constexpr const char* never_inherited[] = {
    "PAYORCH_FAILPOINTS", "PAYORCH_TEST_SHARED_DATABASE", "NOTIFY_SOCKET", "WATCHDOG_USEC",
    "WATCHDOG_PID",       "LISTEN_FDS",   "LISTEN_PID",    "LISTEN_FDNAMES",
    "CREDENTIALS_DIRECTORY"};

ExitStatus decode(int wait_status) {
  ExitStatus s;
  if (WIFEXITED(wait_status)) {
    s.exited = true;
    s.code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    s.signal = WTERMSIG(wait_status);
  }
  return s;
}

// Reaps `pid` if it has exited; nullopt while it still runs.
std::optional<ExitStatus> try_reap(pid_t pid) {
  int wait_status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &wait_status, WNOHANG);
    if (r == pid) return decode(wait_status);
    if (r == 0) return std::nullopt;
    if (errno == EINTR) continue;
    throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
}

ExitStatus reap_blocking(pid_t pid) {
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  return decode(wait_status);
}

std::optional<ExitStatus> wait_pid(pid_t pid, std::chrono::milliseconds timeout) {
  std::optional<ExitStatus> status;
  eventually([&] { return (status = try_reap(pid)).has_value(); }, timeout);
  return status;
}

std::string make_temp_dir() {
  std::string pattern = "/tmp/payorch-it-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  return pattern;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

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

}  // namespace

std::string DaemonConfig::render(const std::string& dir) const {
  std::string text;
  for (const std::string* section :
       {&server, &database, &admin, &tenants, &providers, &routing, &engine, &extra}) {
    if (section->empty()) continue;
    text += *section;
    if (text.back() != '\n') text += '\n';
  }
  for (std::size_t at = text.find("{dir}"); at != std::string::npos;
       at = text.find("{dir}", at + dir.size()))
    text.replace(at, 5, dir);
  return text;
}

std::string ExitStatus::describe() const {
  if (exited) return "exited with code " + std::to_string(code);
  if (signal != 0) {
    const char* name = ::sigabbrev_np(signal);
    return "killed by signal " + std::to_string(signal) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "unknown exit";
}

std::size_t open_fds(pid_t pid) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Daemon::Daemon(DaemonConfig config) : dir_(make_temp_dir()) {
  write_file(config_path(), config.render(dir_));
}

Daemon::~Daemon() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int ignored = 0;
    ::waitpid(pid_, &ignored, 0);
  }
  log_audit::audit_logs(dir_);  // secrets in any log fail the run at exit
  if (std::getenv("PAYORCH_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

void Daemon::set_env(const std::string& name, std::optional<std::string> value) {
  env_overrides_[name] = std::move(value);
}

std::vector<std::string> Daemon::environment() const {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool skip = env_overrides_.count(name) > 0;
    for (const char* n : never_inherited) skip = skip || name == n;
    if (!skip) env.push_back(entry);
  }
  for (const auto& [name, value] : env_overrides_)
    if (value) env.push_back(name + "=" + *value);
  return env;
}

pid_t Daemon::spawn(const std::vector<std::string>& args, const std::string& output_path) {
  // Everything the child needs is built before fork(): between fork and execve the child only
  // makes async-signal-safe calls (the test process has threads).
  std::vector<std::string> argv_storage{payorchd_path()};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  const std::vector<std::string> env_storage = environment();
  std::vector<char*> argv, envp;
  for (auto& a : argv_storage) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env_storage) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const int out_fd = ::open(output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out_fd < 0 || null_fd < 0) {
    const int err = errno;
    if (out_fd >= 0) ::close(out_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw std::runtime_error("cannot open " + output_path + " or /dev/null: " + std::strerror(err));
  }
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out_fd);
    ::close(null_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // The daemon must not outlive a crashed test run.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "payorch test harness: execve failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(null_fd);
  return pid;
}

void Daemon::spawn_serve(const std::string& note) {
  ::unlink(port_file().c_str());
  port_ = 0;
  std::vector<std::string> args{"serve", "--config", config_path(), "--port-file", port_file()};
  args.insert(args.end(), serve_args_.begin(), serve_args_.end());
  append_file(log_path(), "==== harness: start " + std::to_string(++starts_) + note +
                              ": payorchd " + join(args) + " ====\n");
  pid_ = spawn(args, log_path());
}

void Daemon::start(std::chrono::milliseconds timeout) {
  if (pid_ > 0) throw std::logic_error("Daemon::start: already running");
  spawn_serve("");

  std::optional<ExitStatus> exited;
  const bool listening = eventually(
      [&] {
        if ((exited = try_reap(pid_))) return true;
        const std::string text = read_file(port_file());
        if (text.empty() || text[0] < '0' || text[0] > '9' ||
            text.find_first_not_of("0123456789\n") != std::string::npos)
          return false;
        const unsigned long value = std::stoul(text);
        if (value == 0 || value > 65535) return false;
        port_ = static_cast<std::uint16_t>(value);
        return true;
      },
      timeout);
  if (exited) {
    pid_ = -1;
    throw std::runtime_error("payorchd " + exited->describe() + " before listening; log tail:\n" +
                             log_tail());
  }
  if (!listening) {
    kill9();
    throw std::runtime_error("payorchd wrote no port file within " +
                             std::to_string(timeout.count()) + " ms; log tail:\n" + log_tail());
  }
}

ExitStatus Daemon::start_expecting_exit(std::chrono::milliseconds timeout) {
  if (pid_ > 0) throw std::logic_error("Daemon::start_expecting_exit: already running");
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

void Daemon::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap_blocking(pid_);
  pid_ = -1;
}

ExitStatus Daemon::terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) throw std::logic_error("Daemon::terminate: not running");
  ::kill(pid_, SIGTERM);
  if (std::optional<ExitStatus> status = wait_exit(timeout)) return *status;
  ::kill(pid_, SIGKILL);
  ExitStatus status = reap_blocking(pid_);
  pid_ = -1;
  return status;  // signal == SIGKILL: it did not stop on SIGTERM in time
}

void Daemon::restart(std::chrono::milliseconds timeout) {
  kill9();
  start(timeout);
}

std::optional<ExitStatus> Daemon::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) throw std::logic_error("Daemon::wait_exit: not running");
  std::optional<ExitStatus> status = wait_pid(pid_, timeout);
  if (status) pid_ = -1;
  return status;
}

bool Daemon::running() {
  if (pid_ <= 0) return false;
  if (try_reap(pid_)) pid_ = -1;
  return pid_ > 0;
}

CommandResult Daemon::run_command(const std::vector<std::string>& args,
                                  std::chrono::milliseconds timeout) {
  const std::string output_path = dir_ + "/command-" + std::to_string(++commands_) + ".log";
  const pid_t pid = spawn(args, output_path);
  CommandResult result;
  if (std::optional<ExitStatus> status = wait_pid(pid, timeout)) {
    result.status = *status;
  } else {
    ::kill(pid, SIGKILL);
    result.status = reap_blocking(pid);
  }
  result.output = read_file(output_path);
  return result;
}

std::string Daemon::log_tail(std::size_t max_bytes) const {
  const std::string text = read_file(log_path());
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

}  // namespace payorch::test
