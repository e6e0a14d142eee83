#pragma once
// Child processes for tests: fork + execve with stdin from /dev/null and stdout/stderr appended
// to a log file, killed if the test run dies, reaped with a decoded exit status. Also the temp
// dirs, port files and polling every process-level test shares.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "support/slowdown.h"

namespace payorch::test {

struct ExitStatus {
  bool exited = false;  // normal exit: `code` is meaningful
  int code = -1;
  int signal = 0;  // killed by this signal
  std::string describe() const;
};

struct CommandResult {
  ExitStatus status;
  std::string output;  // stdout and stderr interleaved
};

// One child process, owned: SIGKILLed and reaped when destroyed if it still runs.
class ChildProcess {
public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Spawns `argv` (argv[0] is the binary's path) with stdout and stderr appended to
  // `output_path`; `env` is the whole environment, or nullptr to inherit this process's.
  // Between fork and execve the child makes only async-signal-safe calls (tests have threads).
  // PR_SET_PDEATHSIG fires when the forking thread exits: spawn from the thread that runs the
  // test case. Throws std::logic_error if a child still runs, std::runtime_error if it cannot
  // be spawned.
  void spawn(const std::vector<std::string>& argv, const std::string& output_path,
             const std::vector<std::string>* env = nullptr);

  // Reaps the child if it has exited (it is then no longer running); nullopt while it runs.
  std::optional<ExitStatus> poll();
  // Waits up to `timeout` for the child to exit on its own; nullopt if it still runs.
  std::optional<ExitStatus> wait_exit(std::chrono::milliseconds timeout);
  // SIGKILL and reap; nullopt if no child was running.
  std::optional<ExitStatus> kill9();
  // SIGTERM, then waits; SIGKILL after `timeout` (the status then says SIGKILL).
  ExitStatus terminate(std::chrono::milliseconds timeout);
  // SIGKILL without reaping: safe from another thread while the owner waits (the pid cannot
  // be reused before the owner reaps it).
  void kill_now() const;

  bool running();
  // The child's pid, -1 when none runs (or it has been reaped).
  pid_t pid() const { return pid_; }

private:
  pid_t pid_ = -1;
};

// This process's environment ("NAME=value" entries) without the variables named in `dropped`:
// the `env` for a child that must not inherit them.
std::vector<std::string> environment_without(std::span<const std::string_view> dropped);

// Runs `argv` to completion (SIGKILL after `timeout`), output captured in `output_path`.
CommandResult run_to_completion(const std::vector<std::string>& argv,
                                const std::string& output_path,
                                std::chrono::milliseconds timeout,
                                const std::vector<std::string>* env = nullptr);

// Polls `condition` every few milliseconds until it is true or `timeout` passes. The timeout is
// an upper bound on how long something may take, so it is scaled for slower builds
// (support/slowdown.h); a CHECK_FALSE(eventually(…)) only watches longer there.
template <class Condition>
bool eventually(Condition&& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + scaled(timeout);
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// What a child that writes its port file once listening is doing after a wait.
struct PortWait {
  std::uint16_t port = 0;           // > 0: listening on it
  std::optional<ExitStatus> exited; // it ended first (the child is reaped)
};
// Waits up to `timeout` for `port_file` to hold a port (digits, 1..65535; written atomically by
// payorchd and payorch-vendor-sim) or for `child` to exit. Neither: port 0 and no exit.
PortWait wait_for_port_file(ChildProcess& child, const std::string& port_file,
                            std::chrono::milliseconds timeout);

// mkdtemp("<base>/<prefix>-XXXXXX"). Throws std::runtime_error on failure.
std::string make_temp_dir(std::string_view prefix, std::string_view base = "/tmp");
// Removes `dir` and everything in it, unless PAYORCH_KEEP_TEST_DIRS is set in the environment.
void remove_temp_dir(const std::string& dir);

// A directory of make_temp_dir(prefix), removed with remove_temp_dir when destroyed.
class TempDir {
public:
  explicit TempDir(std::string_view prefix) : path_(make_temp_dir(prefix)) {}
  ~TempDir() { remove_temp_dir(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `text` as the file `name` (relative to the directory, folders created; write_file);
  // returns its path.
  std::string write(const std::string& name, const std::string& text) const;

private:
  std::string path_;
};

// Reads a whole file ("" if it cannot be opened).
std::string read_file(const std::string& path);
// Writes `text` as the whole file, creating its directories; throws std::runtime_error when it
// cannot.
void write_file(const std::string& path, const std::string& text);
// The last `max_bytes` of a file, "..." in front when cut.
std::string file_tail(const std::string& path, std::size_t max_bytes);

}  // namespace payorch::test
