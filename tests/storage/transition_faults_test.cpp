// Storage faults under a state transition (docs/contract.md §3 invariants 6 and 7, §6): a verified vendor
// callback moving a PROCESSING payment to SUCCEEDED through POST /v1/callbacks/sim, and the
// engine's outcome path (a fenced store::apply_transition in a Writer job, as
// Engine::record_outcome submits it), while the VFS fails the N-th I/O operation. Success is
// reported only for a committed inbox row + state change + one payment.succeeded event;
// otherwise nothing of it is written, and the retry applies it exactly once.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "storage/fault_loop.h"
#include "store/database.h"
#include "store/intake.h"
#include "store/leases.h"
#include "store/transitions.h"
#include "store/exposure.h"
#include "support/payorch_api.h"
#include "support/store_fixture.h"
#include "support/vendor_callbacks.h"

using namespace payorch;
using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* engine_owner = "engine-storage-test";

// A database holding two PROCESSING payments: one a callback will decide, and one whose lease
// the engine holds (its vendor call is out and the answer is about to be recorded).
struct TransitionTemplate {
  TransitionTemplate() {
    FaultyVfs::install();
    dir = storage_temp_dir("payorch-storage-template");
    path = dir + "/template.db";
    const UnixMillis now = SystemClock().now_ms();
    store::prepare_database(path, now);
    {
      store::Db db(path, store::Db::Mode::read_write);
      store::configure_connection(db, 2000);
      OsRandom rng;
      store::Transaction tx(db);
      callback_payment = store::record_intake(db, intake_request("cb-target", 4200), now, rng).payment;
      engine_payment = store::record_intake(db, intake_request("engine-target", 4200), now, rng).payment;
      auto lease = store::claim_lease(db, engine_payment.id, engine_owner, now, 1h);
      REQUIRE(lease);
      fence = lease->fence;
      REQUIRE(store::record_call_started(db, engine_payment.id, fence, true, now));
      tx.commit();
    }
    REQUIRE_FALSE(std::filesystem::exists(path + "-wal"));
  }
  ~TransitionTemplate() { std::filesystem::remove_all(dir); }

  std::string dir, path;
  Payment callback_payment;
  Payment engine_payment;
  std::int64_t fence = 0;
};

constexpr const char* state_of = "SELECT state FROM payments WHERE id = ?";
constexpr const char* row_of = "SELECT * FROM payments WHERE id = ?";
constexpr const char* succeeded_events_of =
    "SELECT count(*) FROM outbox WHERE payment_id = ? AND type = 'payment.succeeded'";
constexpr const char* inbox_rows_of =
    "SELECT count(*) FROM callback_inbox WHERE provider = 'sim' AND event_id = ?";

// The transition is in `db` whole (state, event and, for a callback, the inbox row) or not at
// all; returns whether it is.
bool transition_whole_or_absent(PlainDb& db, const std::string& payment_id,
                                const std::optional<std::string>& inbox_event) {
  const bool moved = db.text(state_of, {payment_id}) == "SUCCEEDED";
  CHECK(db.count(succeeded_events_of, {payment_id}) == (moved ? 1 : 0));
  if (inbox_event) CHECK(db.count(inbox_rows_of, {*inbox_event}) == (moved ? 1 : 0));
  return moved;
}

// The checks both transitions share. `act` performs the operation once and returns what it
// answered; called armed first, then again as the retry.
struct TransitionCase {
  std::string payment_id;
  std::optional<std::string> inbox_event;  // the callback's event id; none for the engine path
  std::function<Answer()> act;
  std::function<void(Answer first)> check_retry;  // after the retry's act()
};

Answer transition_iteration(Iteration& it, InProcessDaemon& daemon, TransitionCase& tc,
                            LogCapture& logs) {
  std::map<std::string, std::int64_t> baseline;
  std::string row_before;
  {
    PlainDb db(it.db_path);
    baseline = db.table_counts();
    row_before = db.text(row_of, {tc.payment_id});
  }
  daemon.warm_up();
  it.arm();
  const Answer answer = tc.act();
  if (it.persistent && it.fault_hit() && answer == Answer::refused)
    CHECK_MESSAGE(tc.act() == Answer::refused, "tried again while the disk is still failing");
  it.disarm();
  INFO("log tail:\n" << logs.tail());
  CHECK_MESSAGE(answer != Answer::other, "neither success-after-commit nor a refusal");

  {
    const std::string image = it.dir + "/crash.db";
    copy_crash_image(it.db_path, image);
    PlainDb db(image);
    CHECK(db.integrity_check() == "ok");
    CHECK(db.exposure_differences() == "");  // invariant 8: kept exposure = recount
    const bool moved = transition_whole_or_absent(db, tc.payment_id, tc.inbox_event);
    if (answer == Answer::committed) CHECK(moved);
    if (answer == Answer::refused && moved) ++it.report->crash_images_with_refused_work;
    ++it.report->crash_images;
  }
  {
    PlainDb db(it.db_path);
    const bool moved = transition_whole_or_absent(db, tc.payment_id, tc.inbox_event);
    if (answer == Answer::committed) {
      CHECK(moved);
    } else {
      CHECK(db.text(row_of, {tc.payment_id}) == row_before);
      CHECK(db.table_counts() == baseline);
    }
  }

  tc.check_retry(answer);  // the same Writer, no restart
  daemon.stop();

  PlainDb db(it.db_path);
  const std::string integrity = db.integrity_check();
  const std::string foreign_keys = db.foreign_key_check();
  CHECK(integrity == "ok");
  CHECK(foreign_keys == "");
  CHECK(db.exposure_differences() == "");  // invariant 8: kept exposure = recount
  if (integrity == "ok" && foreign_keys.empty()) ++it.report->integrity_checks;
  CHECK(db.text(state_of, {tc.payment_id}) == "SUCCEEDED");
  CHECK(db.count(succeeded_events_of, {tc.payment_id}) == 1);
  auto expected = baseline;
  ++expected["outbox"];
  if (tc.inbox_event) {
    CHECK(db.count(inbox_rows_of, {*tc.inbox_event}) == 1);
    ++expected["callback_inbox"];
  }
  CHECK(db.table_counts() == expected);
  return answer;
}

Answer callback_iteration(Iteration& it, const TransitionTemplate& tmpl, LogCapture& logs) {
  logs.clear();
  const config::Config cfg = storage_test_config(it.db_path);
  InProcessDaemon daemon(cfg);
  SimCallback cb;
  cb.event_id = "evt_storage_" + unique_operation_id("cb");
  cb.status = "succeeded";
  cb.reference = tmpl.callback_payment.client_key;
  cb.charge_id = "ch_storage";
  cb.amount_minor = tmpl.callback_payment.amount_minor;
  cb.currency = tmpl.callback_payment.currency;
  cb.payee = tmpl.callback_payment.payee;
  const std::string body = cb.body();

  TransitionCase tc;
  tc.payment_id = tmpl.callback_payment.id;
  tc.inbox_event = cb.event_id;
  tc.act = [&] {
    const HttpResponse r = post_sim_callback(daemon.port(), body);
    INFO("callback answer: " << r.describe());
    if (r.status == 200 && json_string(r.json(), "result") == "applied") return Answer::committed;
    if (is_problem(r, 503, "storage-unavailable")) return Answer::refused;
    FAIL_CHECK("unexpected callback answer: " << r.describe());
    return Answer::other;
  };
  tc.check_retry = [&](Answer first) {
    // The vendor sends the same delivery again.
    const HttpResponse r = post_sim_callback(daemon.port(), body);
    INFO("retry answer: " << r.describe());
    CHECK(r.status == 200);
    if (r.status == 200)
      CHECK(json_string(r.json(), "result") == (first == Answer::committed ? "duplicate" : "applied"));
  };
  return transition_iteration(it, daemon, tc, logs);
}

Answer engine_outcome_iteration(Iteration& it, const TransitionTemplate& tmpl, LogCapture& logs) {
  logs.clear();
  const config::Config cfg = storage_test_config(it.db_path);
  InProcessDaemon daemon(cfg);
  const Payment& p = tmpl.engine_payment;
  const std::int64_t fence = tmpl.fence;
  auto result = std::make_shared<store::CasResult>(store::CasResult::not_found);
  const store::Store::Work job = engine_succeeded_job(daemon, p, fence, result);

  TransitionCase tc;
  tc.payment_id = p.id;
  tc.act = [&] {
    // Plain variables, not a structured binding: clang before 16 cannot capture those in
    // doctest's INFO lambda.
    const auto job_result = daemon.run_store_job(job);
    const store::WriteStatus status = std::get<0>(job_result);
    const std::string error = std::get<1>(job_result);
    INFO("job: " << store::to_string(status) << " " << error);
    if (status == store::WriteStatus::committed) {
      CHECK(*result == store::CasResult::applied);
      return Answer::committed;
    }
    if (status == store::WriteStatus::failed || status == store::WriteStatus::rejected ||
        status == store::WriteStatus::busy)
      return Answer::refused;
    FAIL_CHECK("unexpected job status " << store::to_string(status) << ": " << error);
    return Answer::other;
  };
  tc.check_retry = [&](Answer first) {
    // The engine records the same answer again (its next claim, or the same worker retrying).
    // Plain variables, not a structured binding: clang before 16 cannot capture those in
    // doctest's INFO lambda.
    const auto job_result = daemon.run_store_job(job);
    const store::WriteStatus status = std::get<0>(job_result);
    const std::string error = std::get<1>(job_result);
    INFO("retry job: " << store::to_string(status) << " " << error);
    CHECK(status == store::WriteStatus::committed);
    if (first == Answer::committed)
      CHECK(*result != store::CasResult::applied);  // already decided: no second transition
    else
      CHECK(*result == store::CasResult::applied);
  };
  return transition_iteration(it, daemon, tc, logs);
}

void callback_loop(FaultMode mode) {
  TransitionTemplate tmpl;
  LogCapture logs;
  const LoopReport report = run_fault_loop(
      "callback POST /v1/callbacks/sim", mode, tmpl.path,
      [&](Iteration& it) { return callback_iteration(it, tmpl, logs); });
  CHECK(report.iterations > 1);
  CHECK(report.refused > 0);
  CHECK(report.integrity_checks == report.iterations);
}

void engine_loop(FaultMode mode) {
  TransitionTemplate tmpl;
  LogCapture logs;
  const LoopReport report = run_fault_loop(
      "engine outcome (Writer job)", mode, tmpl.path,
      [&](Iteration& it) { return engine_outcome_iteration(it, tmpl, logs); });
  CHECK(report.iterations > 1);
  CHECK(report.refused > 0);
  CHECK(report.integrity_checks == report.iterations);
}

}  // namespace

TEST_CASE("callback under a transient I/O error at every operation: 2xx only after commit") {
  callback_loop(FaultMode::transient);
}

TEST_CASE("callback on a disk that dies at every operation: 503, payment unchanged, then exactly once") {
  callback_loop(FaultMode::dead_disk);
}

TEST_CASE("callback on a disk that fills at every write: 503, payment unchanged, then exactly once") {
  callback_loop(FaultMode::disk_full);
}

TEST_CASE("engine outcome under a transient I/O error at every operation") {
  engine_loop(FaultMode::transient);
}

TEST_CASE("engine outcome on a disk that dies at every operation") {
  engine_loop(FaultMode::dead_disk);
}

TEST_CASE("engine outcome on a disk that fills at every write") {
  engine_loop(FaultMode::disk_full);
}
