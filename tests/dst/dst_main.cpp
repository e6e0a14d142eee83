// payorch-dst: runs the deterministic simulation for as many seeds as asked.
//   payorch-dst [--from S] [--seeds N]      many seeds; prints failing seeds and totals
//   payorch-dst --seed S [--trace]          one seed; --trace prints every step and log line
// Exit status 1 if any seed violated an invariant.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <algorithm>

#include "dst/simulation.h"

using namespace payorch::dst;

int main(int argc, char** argv) {
  std::uint64_t from = 1, seeds = 10'000;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool one = false, trace = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::uint64_t {
      if (i + 1 >= argc) {
        std::cerr << "payorch-dst: " << a << " needs a value\n";
        std::exit(2);
      }
      return std::stoull(argv[++i]);
    };
    if (a == "--from") from = value();
    else if (a == "--seeds") seeds = value();
    else if (a == "--seed") { from = value(); seeds = 1; one = true; }
    else if (a == "--trace") trace = true;
    else if (a == "--jobs") jobs = static_cast<unsigned>(value());
    else {
      std::cerr << "usage: payorch-dst [--from S] [--seeds N] [--jobs J] | --seed S [--trace]\n";
      return 2;
    }
  }
  std::uint64_t failed = 0, done = 0;
  const auto started = std::chrono::steady_clock::now();
  auto report = [&](const Result& r) {
    ++done;
    if (one) {
      if (trace) std::cout << r.trace;
      std::cout << "seed " << r.seed << ": " << r.profile << "\n" << describe(r.stats) << "\n";
    }
    if (!r.ok()) {
      ++failed;
      std::cout << "seed " << r.seed << " FAILED (" << r.profile << ")\n";
      for (const auto& v : r.violations) std::cout << "  " << v << "\n";
    }
    if (!one && done % 10'000 == 0) std::cerr << "payorch-dst: " << done << " seeds, " << failed << " failed\n";
  };
  Stats total;
  if (one) {
    if (!trace) silence_logs();
    const Result r = run(Options{.seed = from, .trace = trace});
    total = r.stats;
    report(r);
  } else {
    total = run_many(from, seeds, jobs, report);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "dst: seeds " << from << ".." << from + seeds - 1 << " in " << secs << " s ("
            << static_cast<double>(seeds) / secs << " seeds/s), failed " << failed << "\n"
            << describe(total) << "\n";
  return failed == 0 ? 0 : 1;
}
