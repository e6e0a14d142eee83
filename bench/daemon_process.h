#pragma once
// The real payorchd as a child process of the benchmark: spawned with `serve --config FILE
// --port-file FILE`, its stdout/stderr in a log file, killed if the benchmark dies (the
// benchmark must never leave a daemon behind).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace payorch::bench {

class DaemonProcess {
public:
  // Spawns the daemon. Call only while the benchmark has no other threads (fork + execve).
  // Throws std::runtime_error if it cannot be spawned.
  DaemonProcess(const std::string& binary, const std::string& config_path,
                const std::string& port_file, const std::string& log_path);
  // SIGKILLs and reaps the daemon if it still runs.
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Waits for the port file (written atomically by the daemon after it listens). Throws with
  // the log tail if the daemon exits first or `timeout` passes.
  std::uint16_t wait_for_port(std::chrono::milliseconds timeout);

  // SIGTERM (drain), then waits; SIGKILL after `timeout`. Returns how it ended, e.g.
  // "exited with code 0" — the only answer a clean drain gives.
  std::string terminate(std::chrono::milliseconds timeout);

  // SIGKILL without reaping: safe from another thread while the owner waits on clients
  // (the pid cannot be reused before the owner reaps it).
  void kill_now() const;

  std::string log_tail(std::size_t max_bytes = 2048) const;

private:
  pid_t pid_ = -1;
  std::string port_file_;
  std::string log_path_;
};

}  // namespace payorch::bench
