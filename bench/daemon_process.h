#pragma once
// A daemon as a child process of the benchmark (payorchd, payorch-vendor-sim): its stdout and
// stderr in a log file, its port read from the port file it writes once listening, killed if
// the benchmark dies (the benchmark must never leave a daemon behind).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "support/process.h"

namespace payorch::bench {

class DaemonProcess {
public:
  // Spawns `argv` (argv[0] is the binary's path), which must write its port to `port_file`.
  // Call only while the benchmark has no other threads (fork + execve). Throws
  // std::runtime_error if it cannot be spawned.
  DaemonProcess(const std::vector<std::string>& argv, const std::string& port_file,
                const std::string& log_path);
  // payorchd: `binary serve --config FILE --port-file FILE`, after `prefix` when given (e.g.
  // ip netns exec NAME: the same process, in a network namespace).
  DaemonProcess(const std::string& binary, const std::string& config_path,
                const std::string& port_file, const std::string& log_path,
                const std::vector<std::string>& prefix = {});
  // SIGKILLs and reaps the daemon if it still runs.
  ~DaemonProcess() = default;
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Waits for the port file (written atomically by the daemon after it listens). Throws with
  // the log tail if the daemon exits first or `timeout` passes.
  std::uint16_t wait_for_port(std::chrono::milliseconds timeout);

  // SIGTERM (drain), then waits; SIGKILL after `timeout`. Returns how it ended, e.g.
  // "exited with code 0" — the only answer a clean drain gives.
  std::string terminate(std::chrono::milliseconds timeout);

  // terminate() in two steps, so that several daemons drain at once: SIGTERM without waiting,
  // then the wait (SIGKILL after `timeout`), answered as terminate() answers. A second SIGTERM
  // could reach a daemon past its drain, once it no longer handles the signal.
  void signal_terminate() const;
  std::string await_exit(std::chrono::milliseconds timeout);

  // SIGKILL without reaping: safe from another thread while the owner waits on clients
  // (the pid cannot be reused before the owner reaps it).
  void kill_now() const;

  std::string log_tail(std::size_t max_bytes = 2048) const;

  pid_t pid() const { return child_.pid(); }

  // VmRSS and VmHWM (peak) from /proc/<pid>/status, in KiB; {0, 0} if it cannot be read.
  struct Memory {
    std::int64_t rss_kib = 0;
    std::int64_t hwm_kib = 0;
  };
  Memory memory() const;

private:
  test::ChildProcess child_;
  std::string name_;  // the binary's file name, for messages
  std::string port_file_;
  std::string log_path_;
};

}  // namespace payorch::bench
