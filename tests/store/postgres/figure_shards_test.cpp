// The kept figures' shards on PostgreSQL (schema/postgres/008_figure_shards.sql): each writing
// transaction takes a shard row no other transaction holds, so that two group-commit batches
// moving payments between states never lock the same figure rows in opposite orders.
#include <doctest/doctest.h>

#include <memory>
#include <set>
#include <vector>

#include "store/postgres/connection.h"
#include "store/postgres/migrations.h"
#include "support/postgres_cluster.h"

namespace payorch::store::pg {
namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

std::int64_t shard_of(Connection& c) {
  return c.exec("SELECT payorch_figure_shard()::BIGINT").integer(0, 0);
}

// The figure shards the backend `pid` holds, seen from another session.
std::int64_t shards_held_by(Connection& observer, int pid) {
  return observer
      .exec("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1885436291"
            " AND pid = $1 AND granted",
            {pid})
      .integer(0, 0);
}

}  // namespace

TEST_CASE("figure shards on PostgreSQL: sixteen transactions at once hold sixteen shards") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  // Sessions until two have backend pids alike modulo 16 (the shard the pid alone gave), then
  // sixteen with those two among them.
  std::vector<std::unique_ptr<Connection>> opened;
  std::vector<std::unique_ptr<Connection>> sessions;
  int by_pid[16];
  for (int& at : by_pid) at = -1;
  while (sessions.empty() && opened.size() < 64) {
    opened.push_back(std::make_unique<Connection>(db->url()));
    const int home = opened.back()->backend_pid() % 16;
    if (by_pid[home] >= 0) {
      sessions.push_back(std::move(opened[static_cast<std::size_t>(by_pid[home])]));
      sessions.push_back(std::move(opened.back()));
    } else {
      by_pid[home] = static_cast<int>(opened.size()) - 1;
    }
  }
  REQUIRE(sessions.size() == 2);
  for (auto& c : opened)
    if (c && sessions.size() < 16) sessions.push_back(std::move(c));
  while (sessions.size() < 16) sessions.push_back(std::make_unique<Connection>(db->url()));
  CHECK(sessions[0]->backend_pid() % 16 == sessions[1]->backend_pid() % 16);

  std::set<std::int64_t> shards;
  for (auto& session : sessions) {
    Connection& c = *session;
    c.exec("BEGIN");
    const std::int64_t shard = shard_of(c);
    CHECK(shard >= 0);
    CHECK(shard <= 15);
    CHECK(shard_of(c) == shard);  // kept for the transaction
    shards.insert(shard);
  }
  CHECK(shards.size() == 16);

  // A seventeenth finds every shard held: it shares its pid's, without waiting.
  Connection extra(db->url());
  extra.exec("BEGIN");
  CHECK(shard_of(extra) == extra.backend_pid() % 16);
  extra.exec("ROLLBACK");

  // Each transaction's shard goes with it: a new one takes a shard again.
  Connection observer(db->url());
  Connection& first = *sessions.front();
  CHECK(shards_held_by(observer, first.backend_pid()) == 1);
  first.exec("COMMIT");
  CHECK(shards_held_by(observer, first.backend_pid()) == 0);
  first.exec("BEGIN");
  CHECK(shards.count(shard_of(first)) == 1);
  CHECK(shards_held_by(observer, first.backend_pid()) == 1);
  for (auto& s : sessions) s->exec("ROLLBACK");
}

TEST_CASE("figure shards on PostgreSQL: a savepoint rolled back takes its shard back with it") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  Connection c(db->url());
  Connection observer(db->url());
  c.exec("BEGIN");
  c.exec("SAVEPOINT job_0");
  const std::int64_t shard = shard_of(c);
  c.exec("ROLLBACK TO SAVEPOINT job_0");
  // Neither the setting nor the lock outlives the savepoint: the next job takes one afresh,
  // and holds the shard it names.
  CHECK(c.exec("SELECT current_setting('payorch.figure_shard', true)").text(0, 0).empty());
  CHECK(shards_held_by(observer, c.backend_pid()) == 0);
  c.exec("SAVEPOINT job_1");
  CHECK(shard_of(c) == shard);
  CHECK(shards_held_by(observer, c.backend_pid()) == 1);
  c.exec("COMMIT");
}

}  // namespace payorch::store::pg
