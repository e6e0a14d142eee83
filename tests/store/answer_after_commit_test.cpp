// The real Writer's answer-after-commit order (store/writer.h): a job's `done` — the client's
// answer — runs only once COMMIT has returned, so another connection already sees what the job
// wrote; and a COMMIT that fails never answers `committed`, nor runs the job's after-commit
// actions. COMMIT is observed through SQLite's commit hook on the writer's own connection,
// which can also turn that COMMIT into a failure.
#include <doctest/doctest.h>

#include <atomic>

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/sqlite.h"
#include "store/writer.h"
#include "support/journal.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;

namespace {

struct TempDb : test::TempDatabase {
  TempDb() : TempDatabase("answerafter", 1'000, file_only) {}
};

// What happened, in order, from the writer thread; and how many commits the hook still turns
// into a rollback.
struct Journal : test::Journal {
  std::atomic<int> fail_commits = 0;
};

// SQLite calls this at every COMMIT of the connection, before it completes; non-zero turns the
// COMMIT into a ROLLBACK and makes it fail.
int on_commit(void* arg) {
  auto* journal = static_cast<Journal*>(arg);
  if (journal->fail_commits > 0) {
    --journal->fail_commits;
    journal->add("commit refused");
    return 1;
  }
  journal->add("commit");
  return 0;
}

void insert_inbox(Db& db, const std::string& id) {
  db.prepare("INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
             " VALUES ('sim', ?, 0, '{}', 'ok')")
      .bind(1, id)
      .run();
}

// Whether a connection of its own sees the event: what a client reading after its answer sees.
bool visible(const std::string& path, const std::string& id) {
  Db reader(path, Db::Mode::read_only);
  auto st = reader.prepare("SELECT count(*) FROM callback_inbox WHERE event_id = ?");
  st.bind(1, id);
  return st.step() && st.col_int(0) == 1;
}

}  // namespace

TEST_CASE("writer: a job is answered only after COMMIT returned; what it wrote is visible to others by then") {
  TempDb t;
  Journal journal;  // outlives the writer: its hook stays on the writer's connection
  std::promise<bool> seen;
  Writer w(t.path(), WriterOptions{});
  w.start();
  w.submit(
      [&](Db& db) {
        sqlite3_commit_hook(db.handle(), on_commit, &journal);
        insert_inbox(db, "evt-answered");
        journal.add("work");
      },
      [&](WriteStatus s, const std::string&) {
        journal.add(std::string("done ") + std::string(to_string(s)));
        seen.set_value(visible(t.path(), "evt-answered"));
      });
  CHECK(seen.get_future().get());
  // The hook stays on the writer's connection: the next commit is journalled too, and harmless.
  w.stop();
  const auto entries = journal.get();
  REQUIRE(entries.size() >= 3);
  CHECK(std::vector<std::string>(entries.begin(), entries.begin() + 3) ==
        std::vector<std::string>{"work", "commit", "done committed"});
}

TEST_CASE("writer: a COMMIT that fails never answers committed and runs no after-commit action") {
  TempDb t;
  Journal journal;
  journal.fail_commits = 1;
  std::vector<WriteStatus> answers;  // every answer the job got, from the writer thread
  std::promise<void> answered;
  Writer w(t.path(), WriterOptions{});
  w.start();
  w.submit(
      [&](Db& db) {
        sqlite3_commit_hook(db.handle(), on_commit, &journal);
        insert_inbox(db, "evt-lost");
        db.after_commit([&] { journal.add("after-commit action"); });
      },
      [&](WriteStatus s, const std::string&) {
        answers.push_back(s);
        journal.add(std::string("done ") + std::string(to_string(s)));
        if (answers.size() == 1) answered.set_value();
      });
  answered.get_future().get();

  // The writer goes on: the next job commits (the hook lets it through) and is answered.
  std::promise<WriteStatus> next;
  w.submit([&](Db& db) { insert_inbox(db, "evt-next"); },
           [&](WriteStatus s, const std::string&) { next.set_value(s); });
  CHECK(next.get_future().get() == WriteStatus::committed);
  w.stop();
  CHECK(answers == std::vector<WriteStatus>{WriteStatus::failed});
  CHECK_FALSE(visible(t.path(), "evt-lost"));
  CHECK(visible(t.path(), "evt-next"));
  const auto entries = journal.get();
  REQUIRE(entries.size() >= 2);
  CHECK(std::vector<std::string>(entries.begin(), entries.begin() + 2) ==
        std::vector<std::string>{"commit refused", "done failed"});
  for (const auto& e : entries) CHECK(e != "after-commit action");
}
