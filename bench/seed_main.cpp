// payorch-seed: writes N payments into a payorch database in the real schema, for benchmarks
// and load experiments. Never point it at a database a daemon is using: it writes without
// fsync and without a journal on disk, and syncs once at the end.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "bench/cli.h"
#include "bench/seed.h"
#include "util/system_clock.h"

namespace {

using namespace payorch::bench;

constexpr const char* usage =
    "usage: payorch-seed --db PATH --count N [--mix processing=9,in_flight=1]\n"
    "                    [--tenants bench] [--providers sim] [--currencies EUR]\n"
    "                    [--prefix seed-] [--spread 10m] [--due-in DUR] [--batch 100000]\n"
    "                    [--cache-mib 1024] [--seed N]\n"
    "  --db PATH        the database; created and migrated if needed (its folder must exist)\n"
    "  --count N        payments to append\n"
    "  --mix LIST       state weights: processing (never submitted), in_flight (a submit\n"
    "                   started, never ended), unknown, succeeded, failed_final\n"
    "                   (default processing=1)\n"
    "  --tenants LIST, --providers LIST, --currencies LIST\n"
    "                   picked per row; the first provider is the routing default, the others\n"
    "                   are named in the request digest\n"
    "  --prefix P       operation_id = P + 12-digit row number (default seed-); seeding the\n"
    "                   same database twice needs another prefix\n"
    "  --spread DUR     created_at runs evenly over the last DUR (default 10m)\n"
    "  --due-in DUR     non-terminal rows become due DUR from now (default: due now)\n"
    "  --batch N        rows per commit (default 100000)\n"
    "  --cache-mib N    page cache of the seeding connection (default 1024)\n"
    "  --seed N         randomness for ids and keys (default: from the OS)\n"
    "Rows go into `payments` only; the schema's triggers keep the derived figures.\n";

SeedSpec parse_args(int argc, char** argv, std::string& db_path) {
  SeedSpec s;
  bool have_count = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--db") db_path = value();
    else if (arg == "--count") s.count = parse_positive(arg, value(), 1'000'000'000), have_count = true;
    else if (arg == "--mix") s.mix = parse_mix(value());
    else if (arg == "--tenants") s.tenants = parse_list(arg, value());
    else if (arg == "--providers") s.providers = parse_list(arg, value());
    else if (arg == "--currencies") s.currencies = parse_list(arg, value());
    else if (arg == "--prefix") s.operation_prefix = value();
    else if (arg == "--spread") s.spread = parse_duration_flag(arg, value());
    else if (arg == "--due-in") s.due_in = parse_duration_flag(arg, value());
    else if (arg == "--batch") s.rows_per_commit = parse_positive(arg, value(), 100'000'000);
    else if (arg == "--cache-mib") s.cache_mib = parse_positive(arg, value(), 1'000'000);
    else if (arg == "--seed") s.random_seed = static_cast<std::uint64_t>(parse_positive(arg, value(), INT64_MAX));
    else throw std::invalid_argument("unknown argument \"" + arg + "\"");
  }
  if (db_path.empty() || !have_count) throw std::invalid_argument("--db and --count are required");
  if (s.spread.count() < 1) throw std::invalid_argument("--spread must be at least 1ms");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (asks_for_help(argc, argv)) {
    std::printf("%s", usage);
    return 0;
  }
  std::string db_path;
  SeedSpec spec;
  try {
    spec = parse_args(argc, argv, db_path);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "payorch-seed: %s\n%s", e.what(), usage);
    return 2;
  }
  try {
    payorch::SystemClock clock;
    const SeedReport r = seed_payments(db_path, spec, clock.now_ms(), [&](std::int64_t rows) {
      std::fprintf(stderr, "\rpayorch-seed: %lld / %lld", static_cast<long long>(rows),
                   static_cast<long long>(spec.count));
    });
    std::fprintf(stderr, "\n");
    std::printf("seeded %lld payments into %s in %.1f s (%.0f rows/s):", static_cast<long long>(r.rows),
                db_path.c_str(), r.seconds, r.seconds > 0 ? static_cast<double>(r.rows) / r.seconds : 0);
    for (const auto& [kind, n] : r.by_kind)
      std::printf(" %s=%lld", std::string(to_string(kind)).c_str(), static_cast<long long>(n));
    std::printf("\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\npayorch-seed: %s (a partly seeded %s should be deleted)\n", e.what(),
                 db_path.c_str());
    return 1;
  }
}
