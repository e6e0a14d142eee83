#include "bench/cpu_meter.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "support/process.h"

namespace payorch::bench {
namespace {

double clock_ticks() { return static_cast<double>(::sysconf(_SC_CLK_TCK)); }

// The fields of /proc/<pid>/stat after the command name (which may hold spaces): [0] is the
// state, [1] the parent pid, [11] utime and [12] stime in clock ticks. Empty if it is gone.
std::vector<std::string> stat_fields(pid_t pid) {
  const std::string stat = test::read_file("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream in(stat.substr(close + 1));
  for (std::string f; in >> f;) fields.push_back(f);
  return fields;
}

// utime + stime of every thread of `pid` so far; 0 if it is gone.
double cpu_seconds(pid_t pid) {
  const std::vector<std::string> f = stat_fields(pid);
  if (f.size() < 13) return 0;
  return (std::atof(f[11].c_str()) + std::atof(f[12].c_str())) / clock_ticks();
}

// CPU-seconds the machine has not been idle since boot, all cores: /proc/stat's first line
// less idle and iowait.
double machine_busy_seconds() {
  std::istringstream in(test::read_file("/proc/stat"));
  std::string cpu;
  in >> cpu;
  double total = 0, idle = 0;
  double v = 0;
  for (int i = 0; i < 8 && in >> v; ++i) {
    total += v;
    if (i == 3 || i == 4) idle += v;  // idle, iowait
  }
  return (total - idle) / clock_ticks();
}

}  // namespace

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    const std::vector<std::string> f = stat_fields(static_cast<pid_t>(pid));
    if (f.size() > 1 && std::atol(f[1].c_str()) == parent) pids.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return pids;
}

double CpuUse::percent(double cpu_seconds) const {
  const double capacity = wall_seconds * cores;
  return capacity > 0 ? 100.0 * cpu_seconds / capacity : 0;
}

std::string CpuUse::describe() const {
  char head[96];
  std::snprintf(head, sizeof head, "%u cores x %.1f s, %.0f%% busy:", cores, wall_seconds,
                percent(busy_seconds));
  std::string out = head;
  double explained = 0;
  for (const auto& [name, seconds] : parts) {
    char part[96];
    std::snprintf(part, sizeof part, " %s %.0f%%,", name.c_str(), percent(seconds));
    out += part;
    explained += seconds;
  }
  char other[64];
  std::snprintf(other, sizeof other, " other %.0f%%", percent(std::max(0.0, busy_seconds - explained)));
  return out + other;
}

CpuMeter::CpuMeter(std::vector<CpuPart> parts) : parts_(std::move(parts)) {}

CpuMeter::Snapshot CpuMeter::take() const {
  Snapshot s;
  s.at = std::chrono::steady_clock::now();
  s.busy_seconds = machine_busy_seconds();
  for (const CpuPart& part : parts_) {
    std::map<pid_t, double>& seconds = s.parts.emplace_back();
    for (pid_t pid : part.pids()) seconds[pid] = cpu_seconds(pid);
  }
  return s;
}

void CpuMeter::start() { started_ = take(); }

CpuUse CpuMeter::stop() const {
  const Snapshot now = take();
  CpuUse use;
  use.wall_seconds = std::chrono::duration<double>(now.at - started_.at).count();
  use.cores = static_cast<unsigned>(::sysconf(_SC_NPROCESSORS_ONLN));
  use.busy_seconds = now.busy_seconds - started_.busy_seconds;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    double seconds = 0;
    for (const auto& [pid, total] : now.parts[i]) {
      const auto before = started_.parts[i].find(pid);
      seconds += total - (before == started_.parts[i].end() ? 0 : before->second);
    }
    use.parts.emplace_back(parts_[i].name, seconds);
  }
  return use;
}

}  // namespace payorch::bench
