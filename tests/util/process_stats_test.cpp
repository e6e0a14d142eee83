// process_* families: /proc/<pid>/stat, statm and /proc/stat parsed field by field (a command
// name with spaces and parentheses included), and this process read for real.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "util/metrics.h"
#include "util/process_stats.h"

using namespace payorch;

TEST_CASE("process stats: /proc/self/stat fields are counted from the command name's last parenthesis") {
  // Fields 14/15 (utime, stime), 22 (starttime), 23 (vsize); the name is "a) (b c".
  const std::string line =
      "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 125 0 0 20 0 3 0 987654 123456789 2000 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  const auto s = parse_proc_stat(line);
  REQUIRE(s.has_value());
  CHECK(s->utime_ticks == 250);
  CHECK(s->stime_ticks == 125);
  CHECK(s->starttime_ticks == 987654);
  CHECK(s->vsize_bytes == 123456789);
  CHECK_FALSE(parse_proc_stat("4242 (short) S 1 2 3").has_value());
  CHECK_FALSE(parse_proc_stat("no parenthesis at all").has_value());
  CHECK_FALSE(parse_proc_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 1 0 0 20 0 1 0 5 6 7").has_value());

  CHECK(parse_statm_resident_pages("30000 1234 500 10 0 900 0\n") == std::optional<std::uint64_t>(1234));
  CHECK_FALSE(parse_statm_resident_pages("30000").has_value());

  CHECK(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1764700000\nprocesses 10\n") ==
        std::optional<std::uint64_t>(1764700000));
  CHECK_FALSE(parse_boot_time("cpu 1 2 3\n").has_value());
}

TEST_CASE("process stats: this process, with one more descriptor open, and its families rendered") {
  const ProcessStats before = read_process_stats();
  CHECK(before.resident_memory_bytes > 0);
  CHECK(before.virtual_memory_bytes >= before.resident_memory_bytes);
  CHECK(before.cpu_seconds >= 0);
  const double now_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // This test binary started within the last hour and not in the future (a second of slack for
  // the tick rounding of the boot time).
  CHECK(before.start_time_seconds <= now_s + 1);
  CHECK(before.start_time_seconds > now_s - 3600);
  REQUIRE(before.open_fds.has_value());
  REQUIRE(before.max_fds.has_value());
  CHECK(*before.open_fds >= 3);
  CHECK(*before.open_fds <= *before.max_fds);

  const int fd = ::open("/proc/self/stat", O_RDONLY);
  REQUIRE(fd >= 0);
  const ProcessStats after = read_process_stats();
  ::close(fd);
  CHECK(*after.open_fds == *before.open_fds + 1);

  const std::string text = render_process_stats(after);
  for (const char* family : {"process_cpu_seconds_total", "process_resident_memory_bytes",
                             "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
                             "process_start_time_seconds"})
    CHECK_MESSAGE(text.find(std::string("\n") + family + " ") != std::string::npos, family);
  CHECK(text.find("# TYPE process_cpu_seconds_total counter\n") != std::string::npos);
  CHECK(text.find("# TYPE process_start_time_seconds gauge\n") != std::string::npos);
}

TEST_CASE("process stats: the start time keeps its fraction of a second") {
  ProcessStats s;
  s.start_time_seconds = 1764700000.37;
  CHECK(render_process_stats(s).find("process_start_time_seconds 1764700000.37\n") != std::string::npos);
}
