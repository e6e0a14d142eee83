#include "bench/daemon_process.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace payorch::bench {
namespace {

// Inherited variables that would change how payorchd behaves (fault injection, systemd).
constexpr std::string_view never_inherited[] = {"PAYORCH_FAILPOINTS", "NOTIFY_SOCKET",
                                                "WATCHDOG_USEC",      "WATCHDOG_PID",
                                                "LISTEN_FDS",         "LISTEN_PID",
                                                "LISTEN_FDNAMES"};

}  // namespace

namespace {

std::vector<std::string> prefixed(std::vector<std::string> prefix, const std::vector<std::string>& argv) {
  prefix.insert(prefix.end(), argv.begin(), argv.end());
  return prefix;
}

}  // namespace

DaemonProcess::DaemonProcess(const std::string& binary, const std::string& config_path,
                             const std::string& port_file, const std::string& log_path,
                             const std::vector<std::string>& prefix)
    : DaemonProcess(prefixed(prefix, {binary, "serve", "--config", config_path, "--port-file", port_file}),
                    port_file, log_path) {
  name_ = binary.substr(binary.rfind('/') + 1);
}

DaemonProcess::DaemonProcess(const std::vector<std::string>& argv, const std::string& port_file,
                             const std::string& log_path)
    : name_(argv.at(0).substr(argv.at(0).rfind('/') + 1)),
      port_file_(port_file),
      log_path_(log_path) {
  ::unlink(port_file.c_str());
  const std::vector<std::string> env = test::environment_without(never_inherited);
  child_.spawn(argv, log_path, &env);
}

std::uint16_t DaemonProcess::wait_for_port(std::chrono::milliseconds timeout) {
  const test::PortWait wait = test::wait_for_port_file(child_, port_file_, timeout);
  if (wait.exited)
    throw std::runtime_error(name_ + " " + wait.exited->describe() + " before listening; log tail:\n" +
                             log_tail());
  if (wait.port == 0)
    throw std::runtime_error(name_ + " wrote no port file within " +
                             std::to_string(timeout.count()) + " ms; log tail:\n" + log_tail());
  return wait.port;
}

std::string DaemonProcess::terminate(std::chrono::milliseconds timeout) {
  signal_terminate();
  return await_exit(timeout);
}

std::string DaemonProcess::await_exit(std::chrono::milliseconds timeout) {
  if (child_.pid() <= 0) return "not running";
  if (const std::optional<test::ExitStatus> ended = child_.wait_exit(timeout)) return ended->describe();
  const std::optional<test::ExitStatus> killed = child_.kill9();
  return "did not stop within " + std::to_string(timeout.count()) + " ms of SIGTERM; " +
         (killed ? killed->describe() : std::string("gone"));
}

void DaemonProcess::signal_terminate() const {
  if (child_.pid() > 0) ::kill(child_.pid(), SIGTERM);
}

void DaemonProcess::kill_now() const { child_.kill_now(); }

DaemonProcess::Memory DaemonProcess::memory() const {
  Memory m;
  if (pid() <= 0) return m;
  std::istringstream status(test::read_file("/proc/" + std::to_string(pid()) + "/status"));
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
  return test::file_tail(log_path_, max_bytes);
}

}  // namespace payorch::bench
