// The commit sequence and the commit mark (store/commit_mark.h): every writer transaction moves
// the sequence; the mark beside the database follows it at most one interval late and exactly
// at stop, never ahead; the start-up check sees a database behind its mark.
#include <doctest/doctest.h>

#include <future>
#include <stdexcept>

#include "store/commit_mark.h"
#include "store/commit_sequence.h"
#include "store/writer.h"
#include "support/daemon.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;
using namespace std::chrono_literals;

namespace {

using test::run_job;

// A job whose transaction writes a row (as the readiness probe's does).
WriteStatus run_write(Writer& w) { return run_job(w, [](Db& db) { touch_commit_sequence(db); }); }

}  // namespace

TEST_CASE("commit mark: read, written whole, and refused when it holds no number") {
  test::TempDatabase t("commit-mark", 1'000);
  const std::string mark = commit_mark_path(t.path());
  CHECK(mark == t.path() + ".commit-mark");
  CHECK_FALSE(read_commit_mark(mark).has_value());
  write_commit_mark(mark, 42);
  CHECK(read_commit_mark(mark) == 42u);
  CHECK(test::read_file(mark) == "42\n");
  write_commit_mark(mark, 7);  // replaced, whatever it held
  CHECK(read_commit_mark(mark) == 7u);
  for (const char* bad : {"", "\n", "abc\n", "12 13\n", "-1\n", "99999999999999999999999\n"}) {
    CAPTURE(bad);
    test::write_file(mark, bad);
    CHECK_THROWS_AS(read_commit_mark(mark), std::runtime_error);
  }
}

TEST_CASE("commit mark: the writer's transactions that write move the sequence and the mark follows, never ahead") {
  test::TempDatabase t("commit-mark", 1'000);
  const std::string mark = commit_mark_path(t.path());
  CHECK(read_commit_sequence(*t.db) == 0);
  CHECK(check_commit_mark(t.path()).mark_seq == std::nullopt);

  WriterOptions opts;
  opts.commit_mark_path = mark;
  opts.commit_mark_interval = 50ms;
  Writer w(t.path(), opts);
  w.start();
  for (int i = 0; i < 5; ++i) REQUIRE(run_write(w) == WriteStatus::committed);
  CHECK(read_commit_sequence(*t.db) == 5);
  // A transaction that changed nothing wrote nothing: not counted, no health news.
  REQUIRE(run_job(w, [](Db&) {}) == WriteStatus::committed);
  CHECK(read_commit_sequence(*t.db) == 5);
  CHECK(w.health().commit_seq == 5);
  // Within an interval of the last commit; never a figure the database does not hold.
  CHECK(test::eventually([&] { return read_commit_mark(mark) == 5u; }, 2s));
  REQUIRE(run_write(w) == WriteStatus::committed);
  w.stop();  // the last commit is in the mark once the writer has stopped
  CHECK(read_commit_mark(mark) == 6u);
  CHECK(read_commit_sequence(*t.db) == 6);
  CHECK_FALSE(check_commit_mark(t.path()).database_behind());

  // A database that lost commits is behind its mark.
  write_commit_mark(mark, 9);
  const CommitMarkCheck check = check_commit_mark(t.path());
  CHECK(check.database_seq == 6);
  CHECK(check.mark_seq == 9u);
  CHECK(check.database_behind());
}
