#pragma once
// A store::Store for tests written once and run on each driver (tests/store/shared):
//  - sqlite: a temp database file, a started Writer and a ReadPool, and SqliteStore over them;
//  - postgres: the test case's fresh database on the shared cluster (postgres_cluster.h),
//    migrated, and PgStore over it.
// Each test is a TEST_CASE_TEMPLATE over store_drivers, so its name ends in <sqlite> or
// <postgres>:
//   TEST_CASE_TEMPLATE("intake: ...", D, store_drivers) {
//     auto s = test::store_under_test<D>(now);
//     if (!s) return;  // postgres: skipped, with postgres_skip_marker (a failure with CI set)
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "store/store.h"

namespace payorch::test {

enum class Driver { sqlite, postgres };
struct SqliteDriver {
  static constexpr Driver driver = Driver::sqlite;
};
struct PostgresDriver {
  static constexpr Driver driver = Driver::postgres;
};

// CHECKs that `read` (read back) has every field of `written`.
void check_same_payment(const Payment& read, const Payment& written);

// What a job was answered.
struct JobResult {
  store::WriteStatus status = store::WriteStatus::stopped;
  std::string error;
};

// Submits `work` to `store` and waits for its `done`.
JobResult run_job(store::Store& store, store::Store::Work work);
JobResult run_judged_job(store::Store& store, store::Store::JudgedWork work);

class StoreUnderTest {
public:
  // The store of `driver` on a fresh, migrated database (migrated at `now`); nullptr when
  // PostgreSQL is unavailable outside CI (the skip marker is printed).
  static std::unique_ptr<StoreUnderTest> open(Driver driver, UnixMillis now);
  virtual ~StoreUnderTest() = default;

  virtual store::Store& store() = 0;
  // Rows in `table` (committed ones), read beside the store.
  virtual std::int64_t count_rows(const std::string& table) = 0;
  // Runs one statement without parameters beside the store, committed (for rows no operation
  // of Tx writes yet, in SQL both drivers accept).
  virtual void exec(const std::string& sql) = 0;

  // The state changes the store's transactions committed, as its transition observer was told
  // them (WriterOptions::transitions, PgStoreOptions::transitions), in order.
  std::vector<std::pair<PaymentState, PaymentState>> transitions_seen() const;

  JobResult run(store::Store::Work work) { return run_job(store(), std::move(work)); }
  JobResult run_judged(store::Store::JudgedWork work) { return run_judged_job(store(), std::move(work)); }
  template <class F>
  auto read(F&& f) {
    return store().read_value(std::forward<F>(f));
  }
  // `f(tx)`'s value, run in a job that must commit.
  template <class F>
  auto committed(F&& f) {
    decltype(f(std::declval<store::Tx&>())) out{};
    REQUIRE(run([&](store::Tx& tx) { out = f(tx); }).status == store::WriteStatus::committed);
    return out;
  }
  // The payment `id`, read through the store; it must exist.
  Payment payment(const std::string& id);

protected:
  // The observer to give the store.
  store::Db::TransitionObserver observer();

private:
  mutable std::mutex mu_;
  std::vector<std::pair<PaymentState, PaymentState>> seen_;
};

template <class D>
std::unique_ptr<StoreUnderTest> store_under_test(UnixMillis now) {
  return StoreUnderTest::open(D::driver, now);
}

}  // namespace payorch::test

TYPE_TO_STRING_AS("sqlite", payorch::test::SqliteDriver);
TYPE_TO_STRING_AS("postgres", payorch::test::PostgresDriver);

#define PAYORCH_STORE_DRIVERS payorch::test::SqliteDriver, payorch::test::PostgresDriver
