// payorch-bench-intake: durable intakes per second and latency over HTTP at several connection
// counts, beside a baseline of one SQLite commit per row measured in the same run, so the
// ratio says what the daemon's group commit buys on this machine and disk.
#include <unistd.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench/cli.h"
#include "bench/intake_bench.h"
#include "support/process.h"

namespace {

using namespace payorch::bench;

constexpr const char* usage =
    "usage: payorch-bench-intake [--requests N] [--seconds S] [--levels 1,16,128]\n"
    "                            [--json FILE] [--payorchd PATH] [--dir DIR] [--keep]\n"
    "  --requests N   requests per level, warm-up (first 2%) included; also the baseline's\n"
    "                 rows (default 4000)\n"
    "  --seconds S    time cap per level: no request starts after it (default 20)\n"
    "  --levels LIST  concurrent keep-alive connections, comma-separated (default 1,16,128)\n"
    "  --json FILE    also write the figures as JSON\n"
    "  --payorchd P   the daemon to measure (default: the one built beside this program)\n"
    "  --dir DIR      where the temp databases go, which decides the disk measured\n"
    "                 (default $TMPDIR or /tmp)\n"
    "  --keep         keep the temp dirs (databases, daemon logs)\n";

std::vector<int> parse_levels(const std::string& text) {
  std::vector<int> levels;
  for (const std::string& item : parse_list("--levels", text))
    levels.push_back(static_cast<int>(parse_positive("--levels", item, 1024)));
  return levels;
}

// Throws std::invalid_argument on a bad command line.
Options parse_args(int argc, char** argv) {
  Options o;
  o.payorchd = PAYORCHD_PATH;
  o.work_dir = default_work_dir();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--requests") o.requests = parse_positive(arg, value(), 100'000'000);
    else if (arg == "--seconds") o.time_cap = std::chrono::seconds(parse_positive(arg, value(), 86'400));
    else if (arg == "--levels") o.levels = parse_levels(value());
    else if (arg == "--json") o.json_path = value();
    else if (arg == "--payorchd") o.payorchd = value();
    else if (arg == "--dir") o.work_dir = value();
    else if (arg == "--keep") o.keep_dirs = true;
    else throw std::invalid_argument("unknown argument \"" + arg + "\"");
  }
  if (::access(o.payorchd.c_str(), X_OK) != 0)
    throw std::invalid_argument("no executable payorchd at " + o.payorchd +
                                " (build it, or pass --payorchd PATH)");
  return o;
}

double ratio(const Result& r, const Result& baseline) {
  return baseline.per_second > 0 ? r.per_second / baseline.per_second : 0;
}

void print_table(const Options& o, const Result& baseline, const std::vector<Result>& levels) {
  std::printf("payorch intake benchmark (%u cores; %lld requests per level, %lld s cap; "
              "databases under %s)\n",
              std::thread::hardware_concurrency(), static_cast<long long>(o.requests),
              static_cast<long long>(o.time_cap.count()), o.work_dir.c_str());
  std::printf("%-44s %7s %9s %8s %8s  %s\n", "", "n", "r/s", "p50 ms", "p99 ms", "vs baseline");
  auto row = [&](const Result& r) {
    std::printf("%-44s %7lld %9.1f %8.2f %8.2f  %.2fx%s\n", r.name.c_str(),
                static_cast<long long>(r.measured), r.per_second, r.p50_ms, r.p99_ms,
                ratio(r, baseline), r.failures.empty() ? "" : "  FAILED");
  };
  row(baseline);
  for (const Result& r : levels) row(r);
  std::printf("(n = measured requests, after a warm-up of %lld; r/s = measured / wall time of "
              "the measured part)\n",
              static_cast<long long>(warmup_count(o.requests)));
  auto notes = [](const Result& r) {
    if (r.capped)
      std::printf("note: %s hit the time cap after %lld of its requests\n", r.name.c_str(),
                  static_cast<long long>(r.attempted));
    for (const std::string& f : r.failures) std::printf("FAILURE: %s: %s\n", r.name.c_str(), f.c_str());
  };
  notes(baseline);
  for (const Result& r : levels) notes(r);
}

boost::json::object to_json(const Result& r, const Result& baseline) {
  boost::json::array failures;
  for (const std::string& f : r.failures) failures.emplace_back(f);
  return {{"name", r.name},           {"concurrency", r.concurrency},
          {"attempted", r.attempted}, {"created", r.ok},
          {"non_201", r.unexpected},     {"measured", r.measured},
          {"per_second", r.per_second}, {"p50_ms", r.p50_ms},
          {"p99_ms", r.p99_ms},       {"ratio_to_baseline", ratio(r, baseline)},
          {"capped", r.capped},       {"failures", std::move(failures)}};
}

void write_json(const Options& o, const Result& baseline, const std::vector<Result>& levels,
                bool ok) {
  boost::json::array http;
  for (const Result& r : levels) http.push_back(to_json(r, baseline));
  const boost::json::object doc{{"cores", std::thread::hardware_concurrency()},
                                {"requests_per_level", o.requests},
                                {"seconds_cap", o.time_cap.count()},
                                {"warmup", warmup_count(o.requests)},
                                {"work_dir", o.work_dir},
                                {"baseline", to_json(baseline, baseline)},
                                {"http", std::move(http)},
                                {"ok", ok}};
  payorch::test::write_file(*o.json_path, boost::json::serialize(doc) + "\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  try {
    opts = parse_args(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "payorch-bench-intake: %s\n%s", e.what(), usage);
    return 2;
  }
  try {
    std::fprintf(stderr, "payorch-bench-intake: baseline ...\n");
    const Result baseline = run_baseline(opts);
    std::vector<Result> levels;
    for (int c : opts.levels) {
      std::fprintf(stderr, "payorch-bench-intake: http c=%d ...\n", c);
      levels.push_back(run_http_level(opts, c));
    }
    bool ok = baseline.failures.empty();
    for (const Result& r : levels) ok = ok && r.failures.empty();
    print_table(opts, baseline, levels);
    if (opts.json_path) write_json(opts, baseline, levels, ok);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payorch-bench-intake: %s\n", e.what());
    return 1;
  }
}
