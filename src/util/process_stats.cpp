#include "util/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "util/metrics.h"

namespace payorch {
namespace {

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\n') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::string read_file(const char* path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("cannot read ") + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<double> count_open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  double n = 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n - 1;  // the descriptor opendir itself holds
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view line) {
  const std::size_t close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  // After the command name: field 3 (state) is index 0, so field N is index N - 3.
  const std::vector<std::string_view> f = split_spaces(line.substr(close + 1));
  if (f.size() < 21) return std::nullopt;
  const auto utime = to_u64(f[11]), stime = to_u64(f[12]), start = to_u64(f[19]), vsize = to_u64(f[20]);
  if (!utime || !stime || !start || !vsize) return std::nullopt;
  return ProcStat{*utime, *stime, *start, *vsize};
}

std::optional<std::uint64_t> parse_statm_resident_pages(std::string_view text) {
  const std::vector<std::string_view> f = split_spaces(text);
  if (f.size() < 2) return std::nullopt;
  return to_u64(f[1]);
}

std::optional<std::uint64_t> parse_boot_time(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    if (line.starts_with("btime ")) return to_u64(line.substr(6));
    at = end + 1;
  }
  return std::nullopt;
}

ProcessStats read_process_stats() {
  const auto stat = parse_proc_stat(read_file("/proc/self/stat"));
  const auto resident = parse_statm_resident_pages(read_file("/proc/self/statm"));
  const auto boot = parse_boot_time(read_file("/proc/stat"));
  if (!stat || !resident || !boot) throw std::runtime_error("unexpected format in /proc");
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  ProcessStats s;
  s.cpu_seconds = static_cast<double>(stat->utime_ticks + stat->stime_ticks) / ticks;
  s.resident_memory_bytes = static_cast<double>(*resident) * page;
  s.virtual_memory_bytes = static_cast<double>(stat->vsize_bytes);
  s.start_time_seconds = static_cast<double>(*boot) + static_cast<double>(stat->starttime_ticks) / ticks;
  s.open_fds = count_open_fds();
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    s.max_fds = static_cast<double>(limit.rlim_cur);
  return s;
}

std::string render_process_stats(const ProcessStats& s) {
  std::string out =
      render_counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                     {{{}, s.cpu_seconds}}) +
      render_gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                   {{{}, s.resident_memory_bytes}}) +
      render_gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                   {{{}, s.virtual_memory_bytes}}) +
      render_gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                   {{{}, s.start_time_seconds}});
  if (s.open_fds) out += render_gauge("process_open_fds", "Number of open file descriptors.", {{{}, *s.open_fds}});
  if (s.max_fds)
    out += render_gauge("process_max_fds", "Maximum number of open file descriptors.", {{{}, *s.max_fds}});
  return out;
}

}  // namespace payorch
