// Claim rounds for one provider run one at a time across nodes (store/postgres/leases.h): a
// round decides in its own transaction which submits the risk caps allow, reading the kept
// exposure; under READ COMMITTED it would not see another node's round still in flight, and two
// rounds at once could each fill the room left under a cap (docs/contract.md §3 invariant 8).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/seeded_random.h"
#include "store/postgres/figures.h"
#include "store/postgres/leases.h"
#include "store/postgres/migrations.h"
#include "store/postgres/payments.h"
#include "support/process.h"
#include "support/postgres_cluster.h"
#include "support/store_fixture.h"

namespace payorch::store::pg {
namespace {

using namespace std::chrono_literals;
constexpr UnixMillis t0 = 1'700'000'000'000;

// How many sessions wait for a claim lock of `provider` right now.
std::int64_t waiting_for_claim_lock(Connection& conn, const std::string& provider) {
  return conn
      .exec("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND classid = $1::bigint AND objid = (hashtext($2)::bigint & 4294967295) AND objsubid = 2",
            {claim_lock_class, provider})
      .integer(0, 0);
}

}  // namespace

TEST_CASE("claims on PostgreSQL: a second node's round for the provider waits for the first's commit, then sees its submits") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  SeededRandom rng(7);
  Connection setup(db->url());
  setup.exec("BEGIN");
  for (const char* id : {"op-1", "op-2"}) record_intake(setup, test::intake_request(id, 500), t0, rng);
  setup.exec("COMMIT");

  const std::vector<ClaimQuota> quotas{{"sim", 10}};
  Connection a(db->url());
  Connection b(db->url());
  a.exec("BEGIN");
  const std::vector<Lease> by_a = claim_due(a, "node-a", t0 + 1, Millis{30'000}, quotas, 1);
  REQUIRE(by_a.size() == 1);
  REQUIRE(record_call_started(a, by_a[0].payment_id, by_a[0].fence, true, t0 + 1, nullptr));

  std::atomic<bool> b_claimed{false};
  std::vector<Lease> by_b;
  ExposureFigures seen_by_b{};
  std::thread node_b([&] {
    b.exec("BEGIN");
    by_b = claim_due(b, "node-b", t0 + 2, Millis{30'000}, quotas, 10);
    seen_by_b = exposure_of(b, "sim", "EUR");
    b_claimed = true;
    b.exec("COMMIT");
  });
  // B's round queues on the provider's claim lock while A's is open.
  Connection observer(db->url());
  CHECK(test::eventually([&] { return waiting_for_claim_lock(observer, "sim") == 1; }, 5s));
  std::this_thread::sleep_for(200ms);
  CHECK_FALSE(b_claimed.load());

  a.exec("COMMIT");
  node_b.join();
  REQUIRE(b_claimed.load());
  // B claimed only what A had left, and its risk check saw A's submit in the exposure.
  REQUIRE(by_b.size() == 1);
  CHECK(by_b[0].payment_id != by_a[0].payment_id);
  CHECK(seen_by_b.count == 1);
  CHECK(seen_by_b.amount_minor == 500);
}

TEST_CASE("claims on PostgreSQL: rounds for different providers do not wait for each other") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  prepare_database(db->url(), t0);
  Connection a(db->url());
  Connection b(db->url());
  a.exec("BEGIN");
  claim_due(a, "node-a", t0, Millis{30'000}, {{"sim", 10}}, 10);
  b.exec("BEGIN");
  // Would block (and fail this test on its statement timeout) if it queued behind A.
  b.exec("SET LOCAL lock_timeout = '2s'");
  CHECK_NOTHROW(claim_due(b, "node-b", t0, Millis{30'000}, {{"other", 10}}, 10));
  b.exec("COMMIT");
  a.exec("COMMIT");
}

}  // namespace payorch::store::pg
