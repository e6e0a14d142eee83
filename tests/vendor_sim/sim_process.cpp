#include "vendor_sim/sim_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "support/sqlite_probe.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

std::string make_temp_dir() {
  std::string pattern = "/tmp/payorch-sim-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  return pattern;
}

std::string sim_path() {
  const char* override_path = std::getenv("PAYORCH_TEST_VENDOR_SIM");
  return override_path && *override_path ? override_path : PAYORCH_VENDOR_SIM_PATH;
}

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

std::optional<ExitStatus> try_reap(pid_t pid) {
  int wait_status = 0;
  const pid_t r = ::waitpid(pid, &wait_status, WNOHANG);
  if (r == pid) return decode(wait_status);
  return std::nullopt;
}

ExitStatus kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  return decode(wait_status);
}

// fork + execve with stdout/stderr appended to `log_path`. Only async-signal-safe calls in the
// child: the test process has threads. Call from the main thread: PR_SET_PDEATHSIG fires when
// the forking thread exits.
pid_t spawn(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<std::string> storage{sim_path()};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int out_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) throw std::runtime_error("cannot open " + log_path);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test run
    if (::getppid() != parent) ::_exit(126);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out_fd);
  return pid;
}

}  // namespace

std::string charge_body(const std::string& key, const std::string& source,
                        std::int64_t amount_minor, const std::string& currency,
                        const std::string& payee) {
  boost::json::object o;
  o["amount_minor"] = amount_minor;
  o["currency"] = currency;
  o["payee"] = payee;
  o["source"] = source;
  o["reference"] = key;
  return boost::json::serialize(o);
}

SimProcess::SimProcess(std::vector<std::string> extra_args) : dir_(make_temp_dir()) {
  args_ = {"--listen", "127.0.0.1:0", "--port-file", dir_ + "/port", "--db", db_path(),
           "--api-key", sim_api_key, "--callback-secret", sim_callback_secret,
           "--callback-url", "none"};
  args_.insert(args_.end(), extra_args.begin(), extra_args.end());
  start();
}

SimProcess::~SimProcess() {
  if (pid_ > 0) kill_and_reap(pid_);
  if (std::getenv("PAYORCH_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

void SimProcess::start() {
  const std::string port_file = dir_ + "/port";
  std::error_code ec;
  std::filesystem::remove(port_file, ec);
  ++starts_;
  pid_ = spawn(args_, dir_ + "/sim.log");
  std::optional<ExitStatus> exited;
  const bool up = eventually(
      [&] {
        if ((exited = try_reap(pid_))) return true;
        return !read_file(port_file).empty();
      },
      10s);
  if (exited || !up) {
    if (!exited) kill_and_reap(pid_);
    pid_ = -1;
    throw std::runtime_error("payorch-vendor-sim did not start (" +
                             (exited ? exited->describe() : std::string("no port file")) +
                             "):\n" + log_tail());
  }
  port_ = static_cast<std::uint16_t>(std::stoul(read_file(port_file)));
}

void SimProcess::kill9() {
  if (pid_ > 0) kill_and_reap(pid_);
  pid_ = -1;
}

ExitStatus SimProcess::terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) throw std::logic_error("SimProcess::terminate: not running");
  ::kill(pid_, SIGTERM);
  std::optional<ExitStatus> status;
  eventually([&] { return (status = try_reap(pid_)).has_value(); }, timeout);
  if (!status) status = kill_and_reap(pid_);
  pid_ = -1;
  return *status;
}

void SimProcess::restart() {
  kill9();
  start();
}

std::string SimProcess::log_tail(std::size_t max_bytes) const {
  const std::string text = read_file(dir_ + "/sim.log");
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

HttpResponse SimProcess::post_charge(const std::string& idempotency_key, const std::string& body,
                                     std::chrono::milliseconds timeout) const {
  Headers headers{{"Authorization", std::string("Bearer ") + sim_api_key},
                  {"Content-Type", "application/json"}};
  if (!idempotency_key.empty()) headers.emplace_back("Idempotency-Key", idempotency_key);
  return http_request(port_, "POST", "/v1/charges", headers, body, timeout);
}

HttpResponse SimProcess::get(const std::string& target) const {
  return http_request(port_, "GET", target,
                      {{"Authorization", std::string("Bearer ") + sim_api_key}});
}

HttpResponse SimProcess::control(const std::string& method, const std::string& target,
                                 const std::string& body) const {
  Headers headers;
  if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
  return http_request(port_, method, target, headers, body);
}

std::int64_t SimProcess::count_charges(const std::string& reference) const {
  SqliteProbe probe(db_path());
  return probe.count("SELECT COUNT(*) FROM charges WHERE reference = ?", {reference});
}

CommandResult run_sim_command(const std::vector<std::string>& args,
                              std::chrono::milliseconds timeout) {
  const std::string dir = make_temp_dir();
  const std::string log = dir + "/out.log";
  const pid_t pid = spawn(args, log);
  CommandResult result;
  std::optional<ExitStatus> status;
  eventually([&] { return (status = try_reap(pid)).has_value(); }, timeout);
  result.status = status ? *status : kill_and_reap(pid);
  result.output = read_file(log);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

}  // namespace payorch::test
