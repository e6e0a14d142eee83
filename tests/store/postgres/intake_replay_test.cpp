// A replayed intake on PostgreSQL takes a transaction id (store/postgres/payments.h), so that its
// COMMIT waits for a synchronous standby like a creation's does: a 200 replay of a payment whose
// own COMMIT was cut off before the standby had it is never acknowledged ahead of the standby.
#include <doctest/doctest.h>

#include "core/seeded_random.h"
#include "store/postgres/migrations.h"
#include "store/postgres/payments.h"
#include "support/postgres_cluster.h"
#include "support/store_fixture.h"

namespace payorch::store::pg {

TEST_CASE("intake on PostgreSQL: a replay takes a transaction id; a read does not") {
  auto db = test::postgres_database_or_skip();
  if (!db) return;
  constexpr UnixMillis t0 = 1'700'000'000'000;
  prepare_database(db->url(), t0);
  SeededRandom rng(3);
  Connection conn(db->url());
  auto assigned = [&] { return !conn.exec("SELECT pg_current_xact_id_if_assigned()").is_null(0, 0); };

  conn.exec("BEGIN");
  CHECK(record_intake(conn, test::intake_request("op-r"), t0, rng).kind == IntakeOutcome::Kind::created);
  conn.exec("COMMIT");

  conn.exec("BEGIN");
  CHECK_FALSE(assigned());
  CHECK(find_payment_by_operation(conn, "acme", "payment", "op-r").has_value());
  CHECK_FALSE(assigned());  // reads alone write no commit record
  CHECK(record_intake(conn, test::intake_request("op-r"), t0 + 5, rng).kind == IntakeOutcome::Kind::replayed);
  CHECK(assigned());
  conn.exec("COMMIT");
}

}  // namespace payorch::store::pg
