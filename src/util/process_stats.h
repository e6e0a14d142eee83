#pragma once
// The process_* families every Prometheus client library exports (CPU, memory, file
// descriptors, start time), read from /proc when scraped. Linux only, as payorchd is.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace payorch {

struct ProcessStats {
  double cpu_seconds = 0;              // user + system time
  double resident_memory_bytes = 0;
  double virtual_memory_bytes = 0;
  double start_time_seconds = 0;       // since the Unix epoch
  std::optional<double> open_fds;      // nullopt: /proc/self/fd could not be read
  std::optional<double> max_fds;       // RLIMIT_NOFILE's soft limit; nullopt when unlimited
};

// Fields of /proc/<pid>/stat (proc(5)) that the families need, in clock ticks.
struct ProcStat {
  std::uint64_t utime_ticks = 0;
  std::uint64_t stime_ticks = 0;
  std::uint64_t starttime_ticks = 0;  // after boot
  std::uint64_t vsize_bytes = 0;
};
// Parses one /proc/<pid>/stat line; nullopt if it is not one. The command name (field 2) may
// hold spaces and parentheses: fields are counted from its last ')'.
std::optional<ProcStat> parse_proc_stat(std::string_view line);
// The resident set size in pages: the second field of /proc/<pid>/statm.
std::optional<std::uint64_t> parse_statm_resident_pages(std::string_view text);
// The boot time in seconds since the epoch: the `btime` line of /proc/stat.
std::optional<std::uint64_t> parse_boot_time(std::string_view proc_stat_text);

// This process now. Throws std::runtime_error if /proc/self/stat, /proc/self/statm or
// /proc/stat cannot be read.
ProcessStats read_process_stats();

// The process_* families (process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds, process_start_time_seconds),
// in the exposition format.
std::string render_process_stats(const ProcessStats& stats);

}  // namespace payorch
