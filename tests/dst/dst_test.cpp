// The deterministic simulation in the test suite (refunds included): at least 10,000 seeds on SQLite
// (PAYORCH_DST_SEEDS and PAYORCH_DST_FROM change the range), exact replay of a seed, and proof
// that each invariant check fires when the defect it guards against is planted. The test cases
// named "on PostgreSQL" (ctest `dst_postgres`) run seeds on the throwaway cluster of
// support/postgres_cluster.h, each on a database of its own (PAYORCH_DST_POSTGRES_SEEDS).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dst/postgres_database.h"
#include "dst/simulation.h"
#include "support/postgres_cluster.h"

using namespace payorch::dst;

namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::stoull(v) : fallback;
}

// Runs seeds [from, from + seeds) with `each`'s options; FAILs with the first failing seeds.
Stats check_seeds(std::uint64_t from, std::uint64_t seeds, unsigned jobs, const Options& each,
                  const std::string& replay_flags) {
  std::uint64_t failed = 0;
  std::vector<std::string> reports;
  const auto started = std::chrono::steady_clock::now();
  const Stats total = run_many(from, seeds, jobs, [&](const Result& r) {
    if (r.ok()) return;
    ++failed;
    std::string all;
    for (const auto& v : r.violations) all += "\n  " + v;
    if (reports.size() < 5)
      reports.push_back("seed " + std::to_string(r.seed) + " violated an invariant (replay: tools/dst" +
                        replay_flags + " --seed " + std::to_string(r.seed) + " --trace)\n  profile: " +
                        r.profile + all);
  }, each);
  for (const auto& report : reports) FAIL_CHECK(report);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  MESSAGE("dst" << replay_flags << ": seeds " << from << ".." << from + seeds - 1 << " in " << secs
                << " s, failed " << failed << "; " << describe(total));
  CHECK(failed == 0);
  return total;
}

// The shared cluster's server for the simulation, or nullptr after printing the skip marker
// (with CI set, shared_postgres() FAILs the test case instead).
std::unique_ptr<PostgresServer> postgres_or_skip() {
  std::string why;
  payorch::test::PostgresCluster* cluster = payorch::test::shared_postgres(&why);
  if (cluster == nullptr) {
    const std::string message = std::string(payorch::test::postgres_skip_marker) +
                                " (set CI=true to fail instead): PostgreSQL 15 did not start "
                                "(tools/deps installs it): " + why;
    MESSAGE(message);
    return nullptr;
  }
  return std::make_unique<PostgresServer>(cluster->url("postgres"));
}

}  // namespace

TEST_CASE("dst: every invariant holds over 10,000 seeds") {
  const std::uint64_t from = env_or("PAYORCH_DST_FROM", 1);
  const std::uint64_t seeds = env_or("PAYORCH_DST_SEEDS", 10'000);
  const unsigned jobs = std::max(2u, std::thread::hardware_concurrency());
  const Stats total = check_seeds(from, seeds, jobs, Options{}, "");
  // The runs must actually exercise what they claim to.
  CHECK(total.crashes > 0);
  CHECK(total.stale_outcomes > 0);
  CHECK(total.duplicate_callbacks > 0);
  CHECK(total.expired_keys > 0);
  CHECK(total.recovered_unknown > 0);
  CHECK(total.vendor_faults > 0);
  // Give-ups reported for a vendor-side fence, each checked against the case it opened.
  CHECK(total.fences > 0);
  // Refunds: DEFERRED ones, ones the money rule refused, and calls the vendor received.
  CHECK(total.refunds_deferred > 0);
  CHECK(total.refunds_refused > 0);
  CHECK(total.refund_calls > 0);
  // Dialects: lookups an eventually consistent search answered "not found" for a charge or
  // refund it had committed.
  CHECK(total.hidden_by_search_lag > 0);
  // A confirmed close: orders closed and confirmed FAILED_FINAL, and closes the vendor refused
  // because the user paid at the same moment.
  CHECK(total.closes > 0);
  CHECK(total.closed_final > 0);
  CHECK(total.closes_refused_paid > 0);
  // Not-founds acted on (each judged by the not-found rule), charges the vendor reversed, and
  // the final answers contradicting a terminal payment that were held in a case.
  CHECK(total.trusted_not_found > 0);
  CHECK(total.reversals > 0);
  CHECK(total.late_contradictions > 0);
}

TEST_CASE("dst: a seed replays exactly") {
  for (std::uint64_t seed : {7ULL, 4242ULL, 99991ULL}) {
    const Result a = run(Options{.seed = seed, .trace = true});
    const Result b = run(Options{.seed = seed, .trace = true});
    CHECK(a.fingerprint == b.fingerprint);
    CHECK(a.trace == b.trace);
    CHECK(a.violations == b.violations);
    CHECK(run(Options{.seed = seed + 1}).fingerprint != a.fingerprint);
  }
}

TEST_CASE("dst: each invariant check fires when its defect is planted") {
  struct Planted {
    Defect defect;
    const char* expect;  // in a violation's text
  };
  const Planted planted[] = {
      {Defect::vendor_ignores_key, "invariant 2"},
      {Defect::ack_before_commit, "invariant 3"},
      {Defect::send_before_commit, "invariant 1"},
      {Defect::unfenced_outcome, "invariant 5"},
      {Defect::drop_callback_inbox, "invariant 7"},
      {Defect::unconfirmed_close, "close invariant"},
      {Defect::early_not_found, "not-found rule"},
      {Defect::early_not_found, "invariant 2"},
  };
  for (const auto& p : planted) {
    CAPTURE(std::string(p.expect));
    bool caught = false;
    std::uint64_t seed = 1;
    for (; seed <= 3000 && !caught; ++seed) {
      const Result r = run(Options{.seed = seed, .defect = p.defect});
      for (const auto& v : r.violations) caught = caught || v.find(p.expect) != std::string::npos;
    }
    MESSAGE(std::string(p.expect) << " caught by seed " << seed - 1);
    CHECK(caught);
  }
}

TEST_CASE("dst on PostgreSQL: every invariant holds") {
  auto server = postgres_or_skip();
  if (!server) return;
  const std::uint64_t from = env_or("PAYORCH_DST_FROM", 1);
  const std::uint64_t seeds = env_or("PAYORCH_DST_POSTGRES_SEEDS", 50);
  // A seed on PostgreSQL waits on round trips more than it computes: more seeds at once.
  const unsigned jobs = std::max(8u, 2 * std::thread::hardware_concurrency());
  const Stats total = check_seeds(from, seeds, jobs, Options{.postgres = server.get()}, " --driver postgres");
  CHECK(total.crashes > 0);
  CHECK(total.stale_outcomes > 0);
  CHECK(total.duplicate_callbacks > 0);
  CHECK(total.recovered_unknown > 0);
  CHECK(total.vendor_faults > 0);
  CHECK(total.refunds_deferred > 0);
  CHECK(total.refunds_refused > 0);
  CHECK(total.refund_calls > 0);
}

// PostgreSQL's timing differs from run to run, but a seed runs in one thread on one connection:
// its transactions, and what they find, are the seed's. The stores also agree: a seed takes the
// same steps, log lines included, and ends with the same rows as on SQLite.
TEST_CASE("dst on PostgreSQL: a seed replays exactly, and as on SQLite") {
  auto server = postgres_or_skip();
  if (!server) return;
  for (std::uint64_t seed : {7ULL, 4242ULL}) {
    CAPTURE(seed);
    const Result a = run(Options{.seed = seed, .trace = true, .postgres = server.get()});
    const Result b = run(Options{.seed = seed, .trace = true, .postgres = server.get()});
    CHECK(a.violations.empty());
    CHECK(a.fingerprint == b.fingerprint);
    CHECK(a.trace == b.trace);
    CHECK(a.violations == b.violations);
    const Result on_sqlite = run(Options{.seed = seed, .trace = true});
    CHECK(a.fingerprint == on_sqlite.fingerprint);
    CHECK(a.trace == on_sqlite.trace);
  }
}
