// Storage faults under a state transition on PostgreSQL (docs/contract.md §3 invariants 6 and
// 7, §6, docs/postgres.md): a verified vendor callback moving a PROCESSING payment to SUCCEEDED
// through POST /v1/callbacks/sim, and the engine's outcome path (a fenced apply_transition in
// a store job, as Engine::record_outcome submits it), while the daemon's connection to the
// server is cut at its N-th statement, before it or after the server answered it. Success is
// reported only for a committed inbox row + state change + one payment.succeeded event;
// otherwise nothing of it is written, except where the cut dropped the answer to a COMMIT the
// server carried out (an unknown commit): then all of it is there, and the retry changes
// nothing more. Either way the transition happens exactly once.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

#include "storage/pg_fault_loop.h"
#include "support/payorch_api.h"
#include "store/postgres/pg_store.h"
#include "support/store_fixture.h"
#include "support/store_under_test.h"
#include "support/vendor_callbacks.h"
#include "util/system_clock.h"

using namespace payorch;
using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* engine_owner = "engine-storage-test";

constexpr const char* state_of = "SELECT state FROM payments WHERE id = $1";
constexpr const char* row_of = "SELECT p::text FROM payments p WHERE id = $1";
constexpr const char* succeeded_events_of =
    "SELECT count(*) FROM outbox WHERE payment_id = $1 AND type = 'payment.succeeded'";
constexpr const char* inbox_rows_of =
    "SELECT count(*) FROM callback_inbox WHERE provider = 'sim' AND event_id = $1";

// The transition is in `db` whole (state, event and, for a callback, the inbox row) or not at
// all; returns whether it is.
bool transition_whole_or_absent(PostgresProbe& db, const std::string& payment_id,
                                const std::optional<std::string>& inbox_event) {
  const bool moved = value_of(db, state_of, {payment_id}) == "SUCCEEDED";
  CHECK(db.count(succeeded_events_of, {payment_id}) == (moved ? 1 : 0));
  if (inbox_event) CHECK(db.count(inbox_rows_of, {*inbox_event}) == (moved ? 1 : 0));
  return moved;
}

// The payment a transition will decide, committed before the cut is armed: PROCESSING, and for
// the engine claimed by engine_owner with its submit started (the vendor call is out and its
// answer is about to be recorded).
struct Target {
  Payment payment;
  std::int64_t fence = 0;
};

Target make_target_on(store::Store& store, Random& rng, bool leased) {
  Target target;
  std::optional<store::Lease> lease;
  bool started = false;
  const JobResult answer = run_job(store, [&](store::Tx& tx) {
    const UnixMillis now = SystemClock().now_ms();
    target.payment =
        tx.record_intake(intake_request(unique_operation_id("pg-transition"), 4200), now, rng).payment;
    if (!leased) return;
    // Earlier iterations' payments are terminal: this one is the only due head.
    const auto leases = tx.claim_due(engine_owner, now, 1h, {{"sim", 1}}, 1);
    lease = leases.empty() ? std::nullopt : std::optional(leases.front());
    started = lease && tx.record_call_started(target.payment.id, lease->fence, true, now);
  });
  REQUIRE(answer.status == store::WriteStatus::committed);
  if (leased) {
    REQUIRE(lease);
    REQUIRE(lease->payment_id == target.payment.id);
    REQUIRE(started);
    target.fence = lease->fence;
  }
  return target;
}

// The target, written by the daemon with a warm pool (which that leaves warm), or beside it
// with a cold one (whose pool stays empty until the operation).
Target make_target(CutIteration& it, InProcessDaemon& daemon, bool leased) {
  if (it.pool == Pool::warm) {
    daemon.warm_up();
    return make_target_on(daemon.store(), daemon.rng(), leased);
  }
  store::pg::PgStore beside(store::pg::PgStoreOptions{.url = it.direct_url, .pool_size = 1, .threads = 1});
  return make_target_on(beside, daemon.rng(), leased);
}

// The checks both transitions share. `act` performs the operation once and returns what it
// answered; called armed first, then again as the retry, which `check_retry` judges knowing
// whether the first one had committed.
struct TransitionCase {
  std::string payment_id;
  std::optional<std::string> inbox_event;  // the callback's event id; none for the engine path
  std::function<Answer()> act;
  std::function<void(bool first_committed)> check_retry;
};

Answer transition_iteration(CutIteration& it, InProcessDaemon& daemon, TransitionCase& tc, LogCapture& logs) {
  PostgresProbe db(it.direct_url);
  const auto baseline = table_counts(db);
  const std::string row_before = value_of(db, row_of, {tc.payment_id});
  it.arm();
  const Answer answer = tc.act();
  it.disarm();
  INFO("cut: " << (it.cut_hit() ? it.cut_statement() : std::string("none")));
  INFO("log tail:\n" << logs.tail());
  CHECK_MESSAGE(answer != Answer::other, "neither success-after-commit nor a refusal");

  const bool moved = transition_whole_or_absent(db, tc.payment_id, tc.inbox_event);
  if (answer == Answer::committed) CHECK(moved);
  if (answer == Answer::refused && moved)
    CHECK_MESSAGE(it.commit_outcome_unknown(), "a refused transition was written");
  if (!moved) {
    CHECK(value_of(db, row_of, {tc.payment_id}) == row_before);
    CHECK(table_counts(db) == baseline);
  }
  CHECK(figure_differences(it.direct_url) == "");  // invariant 8: kept figures = recount

  tc.check_retry(moved);  // the same daemon, no restart
  if (answer == Answer::refused && moved) ++it.report->replays_after_unknown_commit;
  // Ready again on its own: the retry's commit showed the store takes writes.
  CHECK(http_request(daemon.port(), "GET", "/readyz").status == 200);
  daemon.stop();

  const std::string figures = figure_differences(it.direct_url);
  CHECK(figures == "");
  const bool succeeded = value_of(db, state_of, {tc.payment_id}) == "SUCCEEDED";
  const bool one_event = db.count(succeeded_events_of, {tc.payment_id}) == 1;
  CHECK(succeeded);
  CHECK(one_event);
  auto expected = baseline;
  ++expected["outbox"];
  bool inbox_ok = true;
  if (tc.inbox_event) {
    inbox_ok = db.count(inbox_rows_of, {*tc.inbox_event}) == 1;
    CHECK(inbox_ok);
    ++expected["callback_inbox"];
  }
  const bool counts_ok = table_counts(db) == expected;
  CHECK(counts_ok);
  if (figures.empty() && succeeded && one_event && inbox_ok && counts_ok) ++it.report->checks;
  return answer;
}

Answer callback_iteration(CutIteration& it, LogCapture& logs) {
  logs.clear();
  const config::Config cfg = postgres_storage_test_config(it.dir, it.url, 2);
  InProcessDaemon daemon(cfg);
  const Payment p = make_target(it, daemon, false).payment;
  SimCallback cb;
  cb.event_id = "evt_storage_" + unique_operation_id("cb");
  cb.status = "succeeded";
  cb.reference = p.client_key;
  cb.charge_id = "ch_storage";
  cb.amount_minor = p.amount_minor;
  cb.currency = p.currency;
  cb.payee = p.payee;
  const std::string body = cb.body();

  TransitionCase tc;
  tc.payment_id = p.id;
  tc.inbox_event = cb.event_id;
  tc.act = [&] {
    const HttpResponse r = post_sim_callback(daemon.port(), body);
    INFO("callback answer: " << r.describe());
    if (r.status == 200 && json_string(r.json(), "result") == "applied") return Answer::committed;
    if (is_problem(r, 503, "storage-unavailable") || is_problem(r, 503, "storage-busy")) return Answer::refused;
    FAIL_CHECK("unexpected callback answer: " << r.describe());
    return Answer::other;
  };
  tc.check_retry = [&](bool first_committed) {
    // The vendor sends the same delivery again.
    const HttpResponse r = retried_while_refused(
        [&] { return post_sim_callback(daemon.port(), body); },
        [](const HttpResponse& answer) { return answer.status == 503; });
    INFO("retry answer: " << r.describe());
    CHECK(r.status == 200);
    if (r.status == 200)
      CHECK(json_string(r.json(), "result") == (first_committed ? "duplicate" : "applied"));
  };
  return transition_iteration(it, daemon, tc, logs);
}

Answer engine_outcome_iteration(CutIteration& it, LogCapture& logs) {
  logs.clear();
  const config::Config cfg = postgres_storage_test_config(it.dir, it.url, 2);
  InProcessDaemon daemon(cfg);
  const Target target = make_target(it, daemon, true);
  const Payment p = target.payment;
  const std::int64_t fence = target.fence;
  auto result = std::make_shared<store::CasResult>(store::CasResult::not_found);
  const store::Store::Work job = engine_succeeded_job(daemon, p, fence, result);

  TransitionCase tc;
  tc.payment_id = p.id;
  tc.act = [&] {
    const auto job_result = daemon.run_store_job(job);
    const store::WriteStatus status = std::get<0>(job_result);
    const std::string error = std::get<1>(job_result);
    INFO("job: " << store::to_string(status) << " " << error);
    if (status == store::WriteStatus::committed) {
      CHECK(*result == store::CasResult::applied);
      return Answer::committed;
    }
    if (status == store::WriteStatus::failed || status == store::WriteStatus::busy) return Answer::refused;
    FAIL_CHECK("unexpected job status " << store::to_string(status) << ": " << error);
    return Answer::other;
  };
  tc.check_retry = [&](bool first_committed) {
    // The engine records the same answer again (its next claim, or the same worker retrying).
    const auto job_result = retried_while_refused(
        [&] { return daemon.run_store_job(job); },
        [](const std::pair<store::WriteStatus, std::string>& answer) {
          return answer.first == store::WriteStatus::failed;
        });
    const store::WriteStatus status = std::get<0>(job_result);
    const std::string error = std::get<1>(job_result);
    INFO("retry job: " << store::to_string(status) << " " << error);
    CHECK(status == store::WriteStatus::committed);
    if (first_committed)
      CHECK(*result != store::CasResult::applied);  // already decided: no second transition
    else
      CHECK(*result == store::CasResult::applied);
  };
  return transition_iteration(it, daemon, tc, logs);
}

// Both pools in `mode`, each loop's report checked.
void transition_loops(const std::string& name, CutMode mode, const CutIterationBody& body) {
  PostgresDatabase* db = loop_database("transitions");
  if (!db) return;
  for (Pool pool : {Pool::warm, Pool::cold}) {
    const CutReport loop = run_cut_loop(name, mode, pool, *db, body);
    CHECK(loop.iterations > 1);
    CHECK(loop.cuts == loop.iterations - 1);
    CHECK(loop.refused > 0);
    // A cold pool has no connection to run a job again on: every cut is refused.
    if (pool == Pool::cold) CHECK(loop.refused == loop.cuts);
    CHECK(loop.checks == loop.iterations);
    // Cut after the server committed: refused, and the retry found the work done.
    if (mode == CutMode::after_reply) CHECK(loop.replays_after_unknown_commit > 0);
  }
}

void callback_loop(CutMode mode) {
  LogCapture logs;
  transition_loops("PostgreSQL callback POST /v1/callbacks/sim", mode,
                   [&logs](CutIteration& it) { return callback_iteration(it, logs); });
}

// Its database holds the callback loops' payments too, all SUCCEEDED by then: the engine's claim
// finds its own target as the only due payment.
void engine_loop(CutMode mode) {
  LogCapture logs;
  transition_loops("PostgreSQL engine outcome (store job)", mode,
                   [&logs](CutIteration& it) { return engine_outcome_iteration(it, logs); });
}

}  // namespace

TEST_CASE("PostgreSQL: callback with the connection cut before each statement: 2xx only after commit") {
  callback_loop(CutMode::before);
}

TEST_CASE("PostgreSQL: callback with the connection cut after each statement's answer: applied exactly once") {
  callback_loop(CutMode::after_reply);
}

TEST_CASE("PostgreSQL: engine outcome with the connection cut before each statement") {
  engine_loop(CutMode::before);
}

TEST_CASE("PostgreSQL: engine outcome with the connection cut after each statement's answer") {
  engine_loop(CutMode::after_reply);
}
