// Effects outside the database that must follow only committed writes (Db::after_commit): run
// once after COMMIT and before the answers, dropped with a rolled-back job, a failed batch or a
// rolled-back transaction — and the transition count for /metrics built on them.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "core/state_machine.h"
#include "store/database.h"
#include "store/intake.h"
#include "store/transitions.h"
#include "store/writer.h"
#include "support/journal.h"
#include "support/store_fixture.h"
#include "util/metrics.h"

using namespace payorch;
using namespace payorch::store;

namespace {

// A migrated file and no connection: each test opens its own.
struct TempDb : test::TempDatabase {
  TempDb() : TempDatabase("aftercommit", 1'000, file_only) {}
};

using test::Journal;  // what ran, in order, from any thread

void insert_inbox(Db& db, const std::string& id) {
  db.prepare("INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
             " VALUES ('sim', ?, 0, '{}', 'ok')")
      .bind(1, id)
      .run();
}


}  // namespace

TEST_CASE("after_commit: committed jobs' actions run after COMMIT and before the answers; a refused job's are dropped") {
  TempDb t;
  Writer w(t.path(), WriterOptions{});
  Journal journal;
  std::vector<std::future<WriteStatus>> results;
  for (int i = 0; i < 4; ++i) {
    auto promise = std::make_shared<std::promise<WriteStatus>>();
    results.push_back(promise->get_future());
    w.submit(
        [i, &journal](Db& db) {
          insert_inbox(db, "evt-" + std::to_string(i));
          db.after_commit([i, &journal] { journal.add("action " + std::to_string(i)); });
          if (i == 2) throw std::runtime_error("refused");
        },
        [i, &journal, promise](WriteStatus s, const std::string&) {
          journal.add("done " + std::to_string(i));
          promise->set_value(s);
        });
  }
  w.start();  // queued before the start: one batch, one transaction
  for (int i = 0; i < 4; ++i) CHECK(results[i].get() == (i == 2 ? WriteStatus::rejected : WriteStatus::committed));
  CHECK(w.transactions() == 1);
  w.stop();
  CHECK(journal.get() == std::vector<std::string>{"action 0", "action 1", "action 3", "done 0", "done 1",
                                                  "done 2", "done 3"});
}

TEST_CASE("after_commit: a batch that never commits (database locked throughout) runs no action, however often it was retried") {
  TempDb t;
  Db other(t.path(), Db::Mode::read_write);
  other.exec("BEGIN IMMEDIATE");  // holds the write lock
  Writer w(t.path(), WriterOptions{2, Millis(20), 16});
  w.start();
  std::atomic<int> runs{0};
  std::atomic<int> actions{0};
  std::promise<WriteStatus> p;
  w.submit(
      [&](Db& db) {
        ++runs;
        db.after_commit([&] { ++actions; });
        insert_inbox(db, "x");
      },
      [&](WriteStatus s, const std::string&) { p.set_value(s); });
  CHECK(p.get_future().get() == WriteStatus::busy);
  CHECK(actions == 0);
  other.exec("ROLLBACK");

  // The next batch commits: only its own action runs, none left over from the failed one.
  std::promise<WriteStatus> p2;
  w.submit([&](Db& db) { db.after_commit([&] { actions += 10; }); },
           [&](WriteStatus s, const std::string&) { p2.set_value(s); });
  CHECK(p2.get_future().get() == WriteStatus::committed);
  w.stop();
  CHECK(actions == 10);
}

TEST_CASE("after_commit: Transaction runs the actions on commit, drops them on rollback; outside a transaction they run at once") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  int ran = 0;
  {
    Transaction tx(db);
    db.after_commit([&] { ++ran; });
    CHECK(ran == 0);
  }  // rolled back
  CHECK(ran == 0);
  {
    Transaction tx(db);
    db.after_commit([&] { ++ran; });
    CHECK(ran == 0);
    tx.commit();
    CHECK(ran == 1);
  }
  db.after_commit([&] { ran += 10; });
  CHECK(ran == 11);
}

TEST_CASE("transitions are counted by from/to once committed, never for a rollback or a change without a new state") {
  TempDb t;
  Db db(t.path(), Db::Mode::read_write);
  SeededRandom rng(7);
  Metrics metrics;
  db.set_transition_observer(transition_counter(metrics));
  auto counted = [&](std::string_view from, std::string_view to) {
    return metrics.value("payorch_transitions_total", {{"from", std::string(from)}, {"to", std::string(to)}});
  };
  const Payment p = test::created_payment(db, "op-1", 1'000, rng);
  CHECK(metrics.total("payorch_transitions_total") == 0);  // intake is not a transition

  const auto to_unknown = transition(PaymentState::processing, Trigger::submit_ambiguous);
  REQUIRE(to_unknown);
  {
    Transaction tx(db);
    CHECK(apply_transition(db, p.id, std::nullopt, *to_unknown, TransitionUpdate{}, 2'000, rng) == CasResult::applied);
  }  // rolled back: nothing happened, nothing counted
  CHECK(metrics.total("payorch_transitions_total") == 0);

  {
    Transaction tx(db);
    CHECK(apply_transition(db, p.id, std::nullopt, *to_unknown, TransitionUpdate{}, 2'000, rng) == CasResult::applied);
    CHECK(counted("PROCESSING", "UNKNOWN") == 0);  // not before COMMIT
    tx.commit();
  }
  CHECK(counted("PROCESSING", "UNKNOWN") == 1);

  // Pending keeps the state (PROCESSING → PROCESSING): a row change, not a state change.
  const auto pending = transition(PaymentState::unknown, Trigger::recovery_pending);
  REQUIRE(pending);
  {
    Transaction tx(db);
    CHECK(apply_transition(db, p.id, std::nullopt, *pending, TransitionUpdate{}, 3'000, rng) == CasResult::applied);
    tx.commit();
  }
  CHECK(counted("UNKNOWN", "PROCESSING") == 1);
  const auto still_pending = transition(PaymentState::processing, Trigger::submit_pending);
  REQUIRE(still_pending);
  REQUIRE(!still_pending->changes_state());
  {
    Transaction tx(db);
    apply_transition(db, p.id, std::nullopt, *still_pending, TransitionUpdate{}, 4'000, rng);
    tx.commit();
  }
  // A refused compare-and-set (the payment is not UNKNOWN any more) counts nothing either.
  {
    Transaction tx(db);
    CHECK(apply_transition(db, p.id, std::nullopt, *pending, TransitionUpdate{}, 5'000, rng) != CasResult::applied);
    tx.commit();
  }
  CHECK(metrics.total("payorch_transitions_total") == 2);
  const std::string text = metrics.render();
  CHECK(text.find("payorch_transitions_total{from=\"PROCESSING\",to=\"UNKNOWN\"} 1\n") != std::string::npos);
}

TEST_CASE("transitions: the observer belongs to a connection; the writer's is WriterOptions::transitions") {
  TempDb t;
  SeededRandom rng(11);
  Metrics metrics;
  Payment p;
  {
    Db setup(t.path(), Db::Mode::read_write);
    p = test::created_payment(setup, "op-1", 1'000, rng);
  }
  Writer w(t.path(), WriterOptions{.transitions = transition_counter(metrics)});
  w.start();
  const auto to_unknown = transition(PaymentState::processing, Trigger::submit_ambiguous);
  REQUIRE(to_unknown);
  std::promise<WriteStatus> done;
  w.submit([&](Db& db) { REQUIRE(apply_transition(db, p.id, std::nullopt, *to_unknown, TransitionUpdate{}, 2'000, rng) == CasResult::applied); },
           [&](WriteStatus s, const std::string&) { done.set_value(s); });
  REQUIRE(done.get_future().get() == WriteStatus::committed);
  w.stop();
  CHECK(metrics.value("payorch_transitions_total", {{"from", "PROCESSING"}, {"to", "UNKNOWN"}}) == 1);

  // Another connection, with no observer of its own, tells the writer's nobody.
  Db other(t.path(), Db::Mode::read_write);
  const auto back = transition(PaymentState::unknown, Trigger::recovery_pending);
  REQUIRE(back);
  {
    Transaction tx(other);
    REQUIRE(apply_transition(other, p.id, std::nullopt, *back, TransitionUpdate{}, 3'000, rng) == CasResult::applied);
    tx.commit();
  }
  CHECK(metrics.total("payorch_transitions_total") == 1);
}
