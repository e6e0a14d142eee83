// store/callbacks on SQLite alone: the names of statuses and results, and migration 003 on a
// database that already holds cases. record_callback's branches are tested on both drivers
// (tests/store/shared/callbacks_test.cpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/ids.h"
#include "store/callbacks.h"
#include "store/database.h"
#include "store/intake.h"
#include "store/migrations.h"
#include "store/payments.h"
#include "store/transitions.h"
#include "store/cases.h"
#include "support/enum_names.h"
#include "support/process.h"
#include "support/store_fixture.h"

using namespace payorch;
using namespace payorch::store;
using payorch::test::intake_request;
using namespace std::chrono_literals;

namespace {

constexpr UnixMillis t0 = 1'700'000'000'000;

std::int64_t count(Db& db, const std::string& sql, const std::string& arg = "") {
  auto st = db.prepare(sql);
  if (sql.find('?') != std::string::npos) st.bind(1, arg);
  st.step();
  return st.col_int(0);
}

}  // namespace

TEST_CASE("callbacks: to_string names every result") {
  CHECK(to_string(CallbackResult::applied) == "applied");
  CHECK(to_string(CallbackResult::duplicate) == "duplicate");
  CHECK(to_string(CallbackResult::confirmed) == "confirmed");
  CHECK(to_string(CallbackResult::ignored_pending) == "ignored_pending");
  CHECK(to_string(CallbackResult::late_contradiction) == "late_contradiction");
  CHECK(to_string(CallbackResult::mismatch) == "mismatch");
  CHECK(to_string(CallbackResult::unknown_reference) == "unknown_reference");
}

TEST_CASE("callbacks: every status and result has a name of its own") {
  test::check_names({CallbackStatus::succeeded, CallbackStatus::declined, CallbackStatus::pending});
  test::check_names({CallbackResult::applied, CallbackResult::duplicate, CallbackResult::confirmed,
                     CallbackResult::ignored_pending, CallbackResult::late_contradiction,
                     CallbackResult::mismatch, CallbackResult::unknown_reference});
}

TEST_CASE("migration 003: cases opened before it survive with their evidence") {
  const test::TempDir dir("payorch-mig3");
  const std::string path = dir.path() + "/old.db";
  SeededRandom rng(3);
  std::string open_case, resolved_case, payment_id;
  {
    Db db(path, Db::Mode::read_write_create);
    configure_connection(db, 2000);
    std::vector<Migration> before_003;
    for (const auto& m : embedded_migrations())
      if (m.version < 3) before_003.push_back(m);
    REQUIRE(migrate(db, before_003, t0) == 2);

    // The rows an older payorchd wrote, in schema v2's own SQL: today's store functions know
    // only today's schema.
    Transaction tx(db);
    std::vector<std::string> cases;
    for (const char* op : {"old-a", "old-b"}) {
      const std::string id = new_payment_id(t0, rng);
      db.prepare("INSERT INTO payments (id, tenant_id, operation_type, operation_id, provider, client_key,"
                 " request_digest, amount_minor, currency, payee, source, state, next_action,"
                 " next_attempt_at, created_at, updated_at) VALUES (?1, 'acme', 'payment', ?2, 'sim', ?3,"
                 " 'sha256:old', 1000, 'EUR', 'merchant-1', 'tok_ok', 'PROCESSING', 'none', ?4, ?4, ?4)")
          .bind(1, id)
          .bind(2, op)
          .bind(3, new_client_key(rng))
          .bind(4, t0)
          .run();
      cases.push_back(new_case_id(t0 + 1, rng));
      db.prepare("INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
                 " VALUES (?1, ?2, 'retry_budget_exhausted', 'open', ?3)")
          .bind(1, cases.back())
          .bind(2, id)
          .bind(3, t0 + 1)
          .run();
      if (payment_id.empty()) payment_id = id;
    }
    open_case = cases[0];
    resolved_case = cases[1];
    db.prepare("UPDATE reconciliation_cases SET evidence = ?1 WHERE id = ?2")
        .bind(1, R"([{"source":"operator","ticket":"OPS-3"}])")
        .bind(2, open_case)
        .run();
    db.prepare("UPDATE reconciliation_cases SET status = 'resolved', resolved_at = ?1, outcome = 'failed_final',"
               " note = 'old', resolved_by = 'alice' WHERE id = ?2")
        .bind(1, t0 + 3)
        .bind(2, resolved_case)
        .run();
    tx.commit();

    CHECK(migrate(db, embedded_migrations(), t0 + 10) >= 1);
    CHECK(schema_version(db) == embedded_migrations().back().version);
    CHECK(count(db, "SELECT COUNT(*) FROM pragma_foreign_key_check") == 0);
    CHECK(count(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'reconciliation_cases_v3'") == 0);
    for (const char* index : {"reconciliation_one_open", "reconciliation_by_status",
                              "reconciliation_one_open_orphan", "callback_inbox_by_received"})
      CHECK_MESSAGE(count(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?", index) == 1,
                    index);

    auto c = find_case(db, open_case);
    REQUIRE(c);
    CHECK(c->payment_id == payment_id);
    CHECK(c->tenant_id == "acme");
    CHECK(c->provider == "sim");
    CHECK_FALSE(c->reference);
    CHECK(c->reason == "retry_budget_exhausted");
    REQUIRE(c->evidence.size() == 1);
    CHECK(c->evidence[0].at("ticket").as_string() == "OPS-3");
    auto r = find_case(db, resolved_case);
    REQUIRE(r);
    CHECK(r->status == CaseStatus::resolved);
    CHECK(r->resolved_by == "alice");
    CHECK(r->note == "old");
    const Payment after = test::stored_payment(db, payment_id);
    REQUIRE(after.reconciliation);
    CHECK(after.reconciliation->case_id == open_case);

    // The constraints came through the rebuild: one open case per payment, real payments only,
    // and a case with no payment must say what the vendor named.
    auto insert = [&](const char* sql) {
      db.prepare(sql).bind(1, new_case_id(t0 + 20, rng)).bind(2, payment_id).run();
    };
    CHECK_THROWS_AS(insert("INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
                           " VALUES (?1, ?2, 'late_contradiction', 'open', 0)"),
                    SqliteError);
    CHECK_THROWS_AS(insert("INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
                           " VALUES (?1, ?2 || 'x', 'late_contradiction', 'resolved', 0)"),
                    SqliteError);
    CHECK_THROWS_AS(insert("INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
                           " VALUES (?1, NULL, 'callback_mismatch', 'open', length(?2))"),
                    SqliteError);
  }
}
