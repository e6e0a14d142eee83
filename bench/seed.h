#pragma once
// Seeding: N payments written straight into a payorch database, in any mix of states, so that
// benchmarks can measure the daemon beside a large pending or finished backlog without
// pushing every row through HTTP first.
//
// The database is opened with the store's own code (migrations applied), then rows are
// inserted into `payments` only, with explicit columns and values an engine could have
// written; the schema's triggers keep whatever figures are derived from them. No outbox
// rows, no cases, no leases: a seeded non-terminal payment is as a lapsed claim or a fresh
// intake leaves it.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace payorch::bench {

// The states a seeded row can be in, with the progress an engine would have left.
enum class SeedKind {
  processing,    // PROCESSING, never submitted: as intake leaves it (next_action submit)
  in_flight,     // PROCESSING, one submit started and never ended (its worker died)
  unknown,       // UNKNOWN after an ambiguous submit (next_action query)
  succeeded,     // SUCCEEDED after one submit, with a vendor reference
  failed_final,  // FAILED_FINAL, declined insufficient_funds
};
std::string_view to_string(SeedKind k);

// Weights per kind, e.g. "processing=9,in_flight=1"; rows are dealt out in a fixed cycle, so a
// count that is a multiple of the weights' sum gets exactly those proportions. Throws
// std::invalid_argument naming the bad item.
std::vector<std::pair<SeedKind, int>> parse_mix(std::string_view text);

// The operation_id of seeded row `row` (0-based): prefix + 12-digit row number.
std::string seeded_operation_id(const std::string& prefix, std::int64_t row);

struct SeedSpec {
  std::int64_t count = 0;
  std::vector<std::pair<SeedKind, int>> mix{{SeedKind::processing, 1}};
  std::vector<std::string> tenants{"bench"};
  std::vector<std::string> providers{"sim"};
  std::vector<std::string> currencies{"EUR"};
  std::string operation_prefix = "seed-";  // see seeded_operation_id
  Millis spread{10 * 60'000};  // created_at runs evenly over [now - spread, now)
  // Non-terminal rows: 0 = due (next_attempt_at <= now); otherwise next_attempt_at = now + due_in.
  Millis due_in{0};
  Millis lease{30'000};        // an in-flight row's lapsed lease: next_attempt_at = started + lease
  std::int64_t rows_per_commit = 100'000;
  std::int64_t cache_mib = 1024;  // page cache of the seeding connection
  std::uint64_t random_seed = 0;  // ids, keys and picks; 0 = from the OS
};

struct SeedReport {
  std::int64_t rows = 0;
  std::map<SeedKind, std::int64_t> by_kind;
  double seconds = 0;
};

// Creates or migrates the database at `path` and appends spec.count payments. Throws on any
// error; a failed run may leave a partly seeded file (its journal is in memory), which should
// be deleted. `progress` is told the rows written after every commit.
SeedReport seed_payments(const std::string& path, const SeedSpec& spec, UnixMillis now,
                         const std::function<void(std::int64_t rows)>& progress = {});

}  // namespace payorch::bench
