// What the PostgreSQL store costs in statements and round trips (docs/performance.md): an
// intake, a claim round per claimed payment, and an outcome, counted on the connection
// (pg::Connection::statements, round_trips) once every statement text is prepared, as in a
// running daemon. The figures are printed; the bounds guard the write path against a
// statement or a round trip that creeps back in.
#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "engine/steps.h"
#include "store/postgres/migrations.h"
#include "store/postgres/pg_store.h"
#include "support/postgres_cluster.h"
#include "support/store_fixture.h"

namespace payorch::store::pg {
namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

struct Counted {
  std::uint64_t statements = 0;
  std::uint64_t round_trips = 0;
};

// Runs `work` on `conn` inside a transaction (as one job of a batch: after a deferred
// savepoint), and counts what it sent, BEGIN and COMMIT aside.
template <class Work>
Counted count_job(Connection& conn, Work work) {
  conn.exec("BEGIN ISOLATION LEVEL READ COMMITTED");
  std::vector<std::function<void()>> actions;
  PgTx tx(conn, &actions);
  const Counted before{conn.statements(), conn.round_trips()};
  conn.defer("SAVEPOINT job_0");
  work(tx);
  conn.flush();  // as the end of a job of a batch does
  const Counted out{conn.statements() - before.statements, conn.round_trips() - before.round_trips};
  conn.commit();
  return out;
}

}  // namespace

TEST_CASE("PostgreSQL: statements and round trips per intake, per claimed payment, per outcome") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  Connection conn(db->url());
  SeededRandom rng(3);
  Contract contract;
  contract.recovery = RecoveryMode::lookup;
  contract.request_timeout = Millis(10'000);
  contract.lease = Millis(30'000);
  const std::map<std::string, Contract> contracts{{"sim", contract}};
  const std::map<std::string, RiskCap> caps{{"sim", RiskCap{1'000'000, 1'000'000'000'000}}};
  int serial = 0;

  const auto intake = [&] {
    return count_job(conn, [&](PgTx& tx) {
      const IntakeOutcome out =
          tx.record_intake(test::intake_request("rt-" + std::to_string(serial++)), t0, rng);
      REQUIRE(out.kind == IntakeOutcome::Kind::created);
    });
  };
  const auto claim = [&](int n, std::vector<engine::Call>& calls) {
    return count_job(conn, [&](PgTx& tx) {
      engine::ClaimRound round;
      round.owner = "rt-node";
      round.now = t0 + 1'000;
      round.lease = contract.lease;
      round.max = n;
      round.contracts = &contracts;
      round.quotas = {{"sim", n}};
      round.caps = &caps;
      calls = engine::claim_round(tx, round, rng);
    });
  };
  const auto outcome = [&](const engine::Call& call) {
    return count_job(conn, [&](PgTx& tx) {
      providers::VendorResult r;
      r.outcome = VendorOutcome::succeeded;
      r.vendor_reference = "ch_" + call.payment.id;
      REQUIRE(engine::record_outcome(tx, call, r, t0 + 2'000, 0.5, rng, nullptr) == CasResult::applied);
    });
  };

  // A first pass prepares every statement text on the connection.
  std::vector<engine::Call> calls;
  intake();
  claim(1, calls);
  REQUIRE(calls.size() == 1);
  outcome(calls[0]);

  const Counted one_intake = intake();
  constexpr int n = 20;
  for (int i = 1; i < n; ++i) intake();
  const Counted round = claim(n, calls);
  REQUIRE(calls.size() == static_cast<std::size_t>(n));
  const Counted one_outcome = outcome(calls[0]);

  const double per_claimed = static_cast<double>(round.round_trips) / n;
  const double statements_per_claimed = static_cast<double>(round.statements) / n;
  std::printf("postgres write path, prepared: intake %llu statements in %llu round trips; claim round of %d: "
              "%llu statements in %llu round trips (%.2f and %.2f per claimed payment); outcome %llu "
              "statements in %llu round trips (each job's savepoint included, BEGIN and COMMIT of the "
              "batch not)\n",
              static_cast<unsigned long long>(one_intake.statements),
              static_cast<unsigned long long>(one_intake.round_trips), n,
              static_cast<unsigned long long>(round.statements),
              static_cast<unsigned long long>(round.round_trips), statements_per_claimed, per_claimed,
              static_cast<unsigned long long>(one_outcome.statements),
              static_cast<unsigned long long>(one_outcome.round_trips));
  // The intake: its savepoint and one statement (row, event and history), one round trip.
  CHECK(one_intake.statements == 2);
  CHECK(one_intake.round_trips == 1);
  // A claim round: one statement takes the leases and returns the rows, one takes the submits
  // from the room under the caps and marks the calls started, whatever the round claims.
  CHECK(round.round_trips <= 3);
  // The outcome: its savepoint and the UPDATE that returns the row, in one round trip; the
  // event and history row, deferred, with the look for deferred refunds, in a second.
  CHECK(one_outcome.round_trips <= 2);
}

}  // namespace payorch::store::pg
