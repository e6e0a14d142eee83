#include "bench/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace payorch::bench {
namespace {

// Inherited variables that would change how payorchd behaves (fault injection, systemd).
constexpr const char* never_inherited[] = {"PAYORCH_FAILPOINTS", "NOTIFY_SOCKET",
                                           "WATCHDOG_USEC",      "WATCHDOG_PID",
                                           "LISTEN_FDS",         "LISTEN_PID",
                                           "LISTEN_FDNAMES"};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string describe(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return "killed by signal " + std::to_string(WTERMSIG(wait_status));
  return "ended (status " + std::to_string(wait_status) + ")";
}

// How `pid` ended, or nullopt while it runs.
std::optional<std::string> try_reap(pid_t pid) {
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return describe(status);
    if (r == 0) return std::nullopt;
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
}

std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool skip = false;
    for (const char* n : never_inherited) skip = skip || name == n;
    if (!skip) env.push_back(entry);
  }
  return env;
}

}  // namespace

DaemonProcess::DaemonProcess(const std::string& binary, const std::string& config_path,
                             const std::string& port_file, const std::string& log_path)
    : DaemonProcess({binary, "serve", "--config", config_path, "--port-file", port_file}, port_file,
                    log_path) {}

DaemonProcess::DaemonProcess(const std::vector<std::string>& argv_in, const std::string& port_file,
                             const std::string& log_path)
    : name_(argv_in.at(0).substr(argv_in.at(0).rfind('/') + 1)),
      port_file_(port_file),
      log_path_(log_path) {
  // Everything the child needs is built before fork(): the child only makes async-signal-safe
  // calls until execve.
  std::vector<std::string> argv_storage = argv_in;
  const std::string exec_failed = "payorch bench: execve of " + argv_in.at(0) + " failed\n";
  const std::vector<std::string> env_storage = child_environment();
  std::vector<char*> argv, envp;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_storage) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  ::unlink(port_file.c_str());
  const int out_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out_fd < 0 || null_fd < 0)
    throw std::runtime_error("cannot open " + log_path + ": " + std::strerror(errno));
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int err = errno;
    ::close(out_fd);
    ::close(null_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the benchmark
    if (::getppid() != parent) ::_exit(126);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(null_fd);
}

DaemonProcess::~DaemonProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int ignored = 0;
  while (::waitpid(pid_, &ignored, 0) < 0 && errno == EINTR) {
  }
}

std::uint16_t DaemonProcess::wait_for_port(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::optional<std::string> ended = try_reap(pid_)) {
      pid_ = -1;
      throw std::runtime_error(name_ + " " + *ended + " before listening; log tail:\n" +
                               log_tail());
    }
    const std::string text = read_file(port_file_);
    if (!text.empty() && text.find_first_not_of("0123456789\n") == std::string::npos) {
      const unsigned long port = std::stoul(text);
      if (port > 0 && port <= 65535) return static_cast<std::uint16_t>(port);
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error(name_ + " wrote no port file within " +
                               std::to_string(timeout.count()) + " ms; log tail:\n" + log_tail());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string DaemonProcess::terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return "not running";
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::optional<std::string> ended = try_reap(pid_)) {
      pid_ = -1;
      return *ended;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return "did not stop within " + std::to_string(timeout.count()) + " ms of SIGTERM; " +
         describe(status);
}

void DaemonProcess::kill_now() const {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

DaemonProcess::Memory DaemonProcess::memory() const {
  Memory m;
  if (pid_ <= 0) return m;
  std::istringstream status(read_file("/proc/" + std::to_string(pid_) + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    std::int64_t* field = line.starts_with("VmRSS:") ? &m.rss_kib
                          : line.starts_with("VmHWM:") ? &m.hwm_kib
                                                       : nullptr;
    if (field != nullptr) *field = std::atoll(line.c_str() + line.find(':') + 1);
  }
  return m;
}

std::string DaemonProcess::log_tail(std::size_t max_bytes) const {
  const std::string text = read_file(log_path_);
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

}  // namespace payorch::bench
