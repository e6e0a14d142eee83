// The commit sequence (store/commit_sequence.h) costs nothing where nothing is written: the
// engine, the deliverer and the watchdog put many jobs through the writer that change no row,
// and such a transaction must stay free (no WAL frame, no fsync). One that changes rows moves
// the sequence, and so does a readiness probe.
#include <doctest/doctest.h>

#include <filesystem>
#include <future>
#include <memory>
#include <stdexcept>

#include "store/commit_sequence.h"
#include "store/writer.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;

namespace {

using test::run_job;

}  // namespace

TEST_CASE("commit sequence: a writer transaction that changed nothing writes nothing and is not counted") {
  test::TempDatabase t("commit-sequence", 1'000);
  const std::string wal = t.path() + "-wal";
  Writer w(t.path(), WriterOptions{});
  w.start();
  CHECK_FALSE(w.health().last_commit_at.has_value());

  // A probe's write: counted, and news for readiness.
  REQUIRE(run_job(w, [](Db& db) { touch_commit_sequence(db); }) == WriteStatus::committed);
  CHECK(read_commit_sequence(*t.db) == 1);
  CHECK(w.health().commit_seq == 1);
  CHECK(w.health().last_commit_at.has_value());
  const auto wal_size = std::filesystem::file_size(wal);

  // Jobs that change no row: their transactions commit and leave the WAL as it was.
  for (int i = 0; i < 3; ++i) REQUIRE(run_job(w, [](Db&) {}) == WriteStatus::committed);
  REQUIRE(run_job(w, [](Db& db) { read_commit_sequence(db); }) == WriteStatus::committed);
  CHECK(std::filesystem::file_size(wal) == wal_size);
  CHECK(read_commit_sequence(*t.db) == 1);
  CHECK(w.health().commit_seq == 1);

  // A job that changes a row moves it.
  REQUIRE(run_job(w, [](Db& db) {
            db.exec("INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
                    " VALUES ('sim', 'evt-1', 0, '{}', 'ok')");
          }) == WriteStatus::committed);
  CHECK(read_commit_sequence(*t.db) == 2);
  CHECK(w.health().commit_seq == 2);
  CHECK(std::filesystem::file_size(wal) > wal_size);

  // Jobs whose changes were all taken back (declined, or refused by a throw) keep nothing: the
  // sequence stays where it was.
  const auto insert = [](Db& db) {
    db.exec("INSERT INTO callback_inbox (provider, event_id, received_at, payload, result)"
            " VALUES ('sim', 'evt-2', 0, '{}', 'ok')");
  };
  auto declined = std::make_shared<std::promise<WriteStatus>>();
  w.submit_judged(
      [&](Db& db) {
        insert(db);
        return Writer::Verdict::take_back;
      },
      [declined](WriteStatus s, const std::string&) { declined->set_value(s); });
  REQUIRE(declined->get_future().get() == WriteStatus::declined);
  REQUIRE(run_job(w, [&](Db& db) {
            insert(db);
            throw std::runtime_error("refused");
          }) == WriteStatus::rejected);
  CHECK(read_commit_sequence(*t.db) == 2);
  CHECK(w.health().commit_seq == 2);
  w.stop();
}
