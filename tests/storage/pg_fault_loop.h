#pragma once
// The storage-fault loops on PostgreSQL: the daemon's connection to the server cut at statement
// N (support/pg_cut_proxy.h), for N = 1, 2, ... until an iteration reaches no cut. The serving
// objects are storage/fault_loop.h's InProcessDaemon over PgStore, built anew for each
// iteration, with nothing else issuing statements while the cut is armed.
//
// Loops share migrated databases of the test cluster (a CREATE DATABASE takes about half a
// second here, longer than an iteration): each iteration works on rows of its own (a new
// operation id, a new payment) and checks against what the database held before it armed the
// cut; the kept figures are recounted over everything.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "config/config.h"
#include "storage/fault_loop.h"
#include "support/pg_cut_proxy.h"
#include "support/postgres_cluster.h"
#include "support/postgres_probe.h"
#include "support/slowdown.h"

namespace payorch::test {

// storage_test_config's daemon on PostgreSQL at `url`, with `pool_size` connections (half of
// them, at least one, run the write jobs). `dir` holds nothing but must exist.
config::Config postgres_storage_test_config(const std::string& dir, const std::string& url,
                                            std::size_t pool_size);

// The daemon's connection pool when the cut is armed:
//  - warm: a connection open and idle, as in a running daemon. PgStore runs a job whose pooled
//    connection is lost before COMMIT once more on a new connection (nothing of it was
//    written), so a cut there is absorbed and the work commits;
//  - cold: none open yet; the job opens its own, and a cut fails it (503).
enum class Pool { warm, cold };
std::string_view to_string(Pool pool);

struct CutReport {
  std::string name;
  CutMode mode = CutMode::before;
  Pool pool = Pool::warm;
  int iterations = 0;      // including the last one, which reached no cut
  std::uint64_t statements = 0;  // the operation's statements in that last, uncut iteration
  int cuts = 0;            // iterations whose armed cut was hit
  int refused = 0;         // answered 503 / a job not committed
  int committed_despite_cut = 0;  // a cut was hit and the work still committed and was answered
                                  // so (the store ran the job again on a new connection)
  int replays_after_unknown_commit = 0;  // refused, found committed whole, the retry a replay
  int checks = 0;          // iterations whose database checks passed
  std::map<std::string, int> cuts_by_statement;  // "COMMIT" -> cuts there
  std::string describe() const;
};

// One iteration. The body builds what it needs on `url` (rows of its own included, before
// arming), calls arm() immediately before the operation under test and disarm() right after
// it, checks through `direct_url`, and reports what the operation answered.
struct CutIteration {
  std::string url;         // through the proxy: the daemon's
  std::string direct_url;  // straight to the server: the checks'
  std::string dir;         // an empty directory for the configuration
  CutMode mode = CutMode::before;
  Pool pool = Pool::warm;
  std::function<void()> arm;
  std::function<void()> disarm;
  std::function<bool()> cut_hit;
  // The SQL the cut hit ("" when none).
  std::function<std::string()> cut_statement;
  CutReport* report = nullptr;

  // Whether a refused operation may have committed: the cut dropped the server's answer to a
  // COMMIT it had carried out.
  bool commit_outcome_unknown() const {
    return mode == CutMode::after_reply && cut_hit() && cut_statement() == "COMMIT";
  }
};
using CutIterationBody = std::function<Answer(CutIteration&)>;

// The migrated database of the loops that name `key`, made at its first use and kept for the
// run of the binary. Loops that share one must leave each other's rows alone: the engine's
// claim takes the oldest due payment, and intake's payments stay due, so they use two.
// nullptr when PostgreSQL is unavailable outside CI (the skip marker is printed).
PostgresDatabase* loop_database(const std::string& key);

// Runs `body` on `db` with the cut at N = 1, 2, ... in `mode` until an iteration reaches no
// cut; fails the test when that takes more than `max_iterations`. Prints the report.
CutReport run_cut_loop(const std::string& name, CutMode mode, Pool pool, PostgresDatabase& db,
                       const CutIterationBody& body, int max_iterations = 200);

// The retry after a cut: `attempt()` again every 20 ms while `refused(answer)` (a 503, a failed
// job), for at most 10 s (scaled); the last answer. The store needs a new connection after a
// cut, and opens none before its reconnect backoff has passed (src/store/postgres/pg_store.cpp):
// this waits for it to be ready rather than for a fixed time.
template <class Attempt, class Refused>
std::invoke_result_t<Attempt&> retried_while_refused(Attempt attempt, Refused refused) {
  const auto deadline = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(10));
  for (;;) {
    auto answer = attempt();
    if (!refused(answer) || std::chrono::steady_clock::now() > deadline) return answer;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Where the kept figures (exposure per provider and currency, payments per state: sums over
// their shards) differ from a recount of the payments; "" when nowhere (invariant 8).
std::string figure_differences(const std::string& url);
// Row counts of every table payorch writes, by table, to compare before and after.
std::map<std::string, std::int64_t> table_counts(PostgresProbe& db);
// The one text value of the one row `sql` returns, "" when it returns no row.
std::string value_of(PostgresProbe& db, const std::string& sql, const std::vector<std::string>& params = {});

}  // namespace payorch::test
