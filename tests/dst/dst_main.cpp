// payorch-dst: runs the deterministic simulation for as many seeds as asked.
//   payorch-dst [--from S] [--seeds N]      many seeds; prints failing seeds and totals
//   payorch-dst --seed S [--trace]          one seed; --trace prints every step and log line
//   --driver sqlite|postgres                the store (default sqlite); postgres runs each seed
//                                           on a database of its own on the server whose URI
//                                           PAYORCH_DST_POSTGRES_URL holds (tools/dst starts a
//                                           throwaway cluster)
// Exit status 1 if any seed violated an invariant, 2 on a usage error or a server that cannot
// be used.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "dst/postgres_database.h"
#include "dst/simulation.h"

using namespace payorch::dst;

int main(int argc, char** argv) {
  std::uint64_t from = 1, seeds = 10'000;
  unsigned jobs = 0;  // default: every core; on PostgreSQL, which is waited on more than it computes, more
  bool one = false, trace = false;
  std::string driver = "sqlite";
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
    else if (a == "--driver" && i + 1 < argc && (argv[i + 1] == std::string("sqlite") || argv[i + 1] == std::string("postgres"))) driver = argv[++i];
    else {
      std::cerr << "usage: payorch-dst [--driver sqlite|postgres] [--from S] [--seeds N] [--jobs J] | --seed S [--trace]\n";
      return 2;
    }
  }
  if (jobs == 0)
    jobs = driver == "postgres" ? std::max(8u, 2 * std::thread::hardware_concurrency())
                                : std::max(1u, std::thread::hardware_concurrency());
  Options each;
  std::unique_ptr<PostgresServer> server;
  if (driver == "postgres") {
    const char* url = std::getenv("PAYORCH_DST_POSTGRES_URL");
    if (url == nullptr || *url == '\0') {
      std::cerr << "payorch-dst: --driver postgres needs PAYORCH_DST_POSTGRES_URL (tools/dst --driver postgres sets it)\n";
      return 2;
    }
    try {
      server = std::make_unique<PostgresServer>(url);
    } catch (const std::exception& e) {
      std::cerr << "payorch-dst: PostgreSQL: " << e.what() << "\n";
      return 2;
    }
    each.postgres = server.get();
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
    Options o = each;
    o.seed = from;
    o.trace = trace;
    const Result r = run(o);
    total = r.stats;
    report(r);
  } else {
    total = run_many(from, seeds, jobs, report, each);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "dst (" << driver << "): seeds " << from << ".." << from + seeds - 1 << " in " << secs << " s ("
            << static_cast<double>(seeds) / secs << " seeds/s), failed " << failed << "\n"
            << describe(total) << "\n";
  return failed == 0 ? 0 : 1;
}
