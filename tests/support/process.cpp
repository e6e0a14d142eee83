#include "support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace payorch::test {
namespace {

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

}  // namespace

std::string ExitStatus::describe() const {
  if (exited) return "exited with code " + std::to_string(code);
  if (signal != 0) {
    const char* name = ::sigabbrev_np(signal);
    return "killed by signal " + std::to_string(signal) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return "unknown exit";
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int ignored = 0;
  while (::waitpid(pid_, &ignored, 0) < 0 && errno == EINTR) {
  }
}

void ChildProcess::spawn(const std::vector<std::string>& argv_in, const std::string& output_path,
                         const std::vector<std::string>* env) {
  if (pid_ > 0) throw std::logic_error("ChildProcess::spawn: a child still runs");
  // Everything the child needs is built before fork().
  std::vector<std::string> argv_storage = argv_in;
  std::vector<char*> argv, envp;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (env != nullptr) {
    for (const auto& e : *env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  char** const child_env = env != nullptr ? envp.data() : environ;

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
    const int err = errno;
    ::close(out_fd);
    ::close(null_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test run
    if (::getppid() != parent) ::_exit(126);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), child_env);
    const char msg[] = "payorch test harness: execve failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(null_fd);
  pid_ = pid;
}

std::optional<ExitStatus> ChildProcess::poll() {
  if (pid_ <= 0) return std::nullopt;
  std::optional<ExitStatus> status = try_reap(pid_);
  if (status) pid_ = -1;
  return status;
}

std::optional<ExitStatus> ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
  std::optional<ExitStatus> status;
  eventually([&] { return (status = poll()).has_value(); }, timeout);
  return status;
}

std::optional<ExitStatus> ChildProcess::kill9() {
  if (pid_ <= 0) return std::nullopt;
  ::kill(pid_, SIGKILL);
  const ExitStatus status = reap_blocking(pid_);
  pid_ = -1;
  return status;
}

ExitStatus ChildProcess::terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) throw std::logic_error("ChildProcess::terminate: not running");
  ::kill(pid_, SIGTERM);
  if (std::optional<ExitStatus> status = wait_exit(timeout)) return *status;
  return *kill9();  // signal == SIGKILL: it did not stop on SIGTERM in time
}

void ChildProcess::kill_now() const {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

bool ChildProcess::running() {
  poll();
  return pid_ > 0;
}

std::vector<std::string> environment_without(std::span<const std::string_view> dropped) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const std::string_view name = entry.substr(0, entry.find('='));
    if (std::find(dropped.begin(), dropped.end(), name) == dropped.end()) env.emplace_back(entry);
  }
  return env;
}

CommandResult run_to_completion(const std::vector<std::string>& argv,
                                const std::string& output_path,
                                std::chrono::milliseconds timeout,
                                const std::vector<std::string>* env) {
  ChildProcess child;
  child.spawn(argv, output_path, env);
  CommandResult result;
  std::optional<ExitStatus> status = child.wait_exit(timeout);
  result.status = status ? *status : *child.kill9();
  result.output = read_file(output_path);
  return result;
}

PortWait wait_for_port_file(ChildProcess& child, const std::string& port_file,
                            std::chrono::milliseconds timeout) {
  PortWait wait;
  eventually(
      [&] {
        if ((wait.exited = child.poll())) return true;
        const std::string text = read_file(port_file);
        if (text.empty() || text[0] < '0' || text[0] > '9' ||
            text.find_first_not_of("0123456789\n") != std::string::npos)
          return false;
        const unsigned long value = std::stoul(text);
        if (value == 0 || value > 65535) return false;
        wait.port = static_cast<std::uint16_t>(value);
        return true;
      },
      timeout);
  return wait;
}

std::string make_temp_dir(std::string_view prefix, std::string_view base) {
  std::string pattern = std::string(base) + "/" + std::string(prefix) + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
  return pattern;
}

void remove_temp_dir(const std::string& dir) {
  if (std::getenv("PAYORCH_KEEP_TEST_DIRS") != nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  const std::string path = path_ + "/" + name;
  write_file(path, text);
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  const std::string text = read_file(path);
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

}  // namespace payorch::test
