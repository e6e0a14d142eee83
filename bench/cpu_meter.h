#pragma once
// Where a phase of a run spent the machine's CPUs, from /proc: the CPU time of each part (the
// daemons, the demo vendor, PostgreSQL's server processes, this benchmark's own client
// threads) beside the time all CPUs were busy. What the parts do not explain ran beside them:
// the kernel's loopback networking done outside their time, and anything else on the machine.
// On a machine whose cores the daemons, the database, the vendor and the load all share, this
// says which of them a figure was waiting for.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace payorch::bench {

struct CpuPart {
  std::string name;
  // The processes of the part now (called at the start and at the end of the phase): a
  // process that started in between counts from its start; one that ended in between is lost.
  std::function<std::vector<pid_t>()> pids;
};

struct CpuUse {
  double wall_seconds = 0;
  unsigned cores = 0;
  double busy_seconds = 0;  // CPU-seconds the machine was not idle (all cores, /proc/stat)
  std::vector<std::pair<std::string, double>> parts;  // CPU-seconds of each part, in order

  // Percent of the machine's capacity (wall_seconds x cores).
  double percent(double cpu_seconds) const;
  // "2 cores x 5.1 s, 97% busy: payorchd 41%, postgres 30%, ..., other 6%".
  std::string describe() const;
};

class CpuMeter {
public:
  explicit CpuMeter(std::vector<CpuPart> parts);
  void start();
  CpuUse stop() const;

private:
  struct Snapshot {
    std::chrono::steady_clock::time_point at;
    double busy_seconds = 0;
    std::vector<std::map<pid_t, double>> parts;  // per part: pid -> CPU-seconds so far
  };
  Snapshot take() const;

  std::vector<CpuPart> parts_;
  Snapshot started_;
};

// The pids whose parent is `parent`, e.g. a PostgreSQL server's backends.
std::vector<pid_t> children_of(pid_t parent);

}  // namespace payorch::bench
