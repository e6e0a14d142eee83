#include "support/store_under_test.h"

#include <future>

#include "store/postgres/migrations.h"
#include "store/postgres/pg_store.h"
#include "store/read_pool.h"
#include "store/sqlite_store.h"
#include "support/postgres_cluster.h"
#include "support/store_fixture.h"

namespace payorch::test {
namespace {

class SqliteUnderTest final : public StoreUnderTest {
public:
  explicit SqliteUnderTest(UnixMillis now)
      : file_("shared-store", now, TempDatabase::file_only),
        writer_(file_.path(), store::WriterOptions{.transitions = observer()}),
        reads_(file_.path(), 2, Millis{2000}),
        store_(writer_, reads_) {
    writer_.start();
  }
  ~SqliteUnderTest() override { writer_.stop(); }

  store::Store& store() override { return store_; }
  std::int64_t count_rows(const std::string& table) override {
    store::Db db(file_.path(), store::Db::Mode::read_only);
    auto st = db.prepare("SELECT COUNT(*) FROM " + table);
    st.step();
    return st.col_int(0);
  }
  void exec(const std::string& sql) override {
    store::Db db(file_.path(), store::Db::Mode::read_write);
    store::configure_connection(db, 2000);
    db.exec(sql);
  }

private:
  TempDatabase file_;
  store::Writer writer_;
  store::ReadPool reads_;
  store::SqliteStore store_;
};

class PostgresUnderTest final : public StoreUnderTest {
public:
  PostgresUnderTest(std::unique_ptr<PostgresDatabase> db, UnixMillis now)
      : db_(std::move(db)),
        migrated_((store::pg::prepare_database(db_->url(), now), true)),
        store_(store::pg::PgStoreOptions{
            .url = db_->url(), .pool_size = 4, .threads = 2, .transitions = observer()}) {}

  store::Store& store() override { return store_; }
  std::int64_t count_rows(const std::string& table) override {
    store::pg::Connection conn(db_->url());
    return conn.exec("SELECT COUNT(*) FROM " + table).integer(0, 0);
  }
  void exec(const std::string& sql) override { store::pg::Connection(db_->url()).exec(sql); }

private:
  std::unique_ptr<PostgresDatabase> db_;
  bool migrated_;
  store::pg::PgStore store_;  // stopped before the database is dropped
};

template <class Submit>
JobResult wait_for(Submit&& submit) {
  auto answer = std::make_shared<std::promise<JobResult>>();
  auto future = answer->get_future();
  submit([answer](store::WriteStatus s, const std::string& error) {
    answer->set_value(JobResult{s, error});
  });
  return future.get();
}

}  // namespace

std::vector<std::pair<PaymentState, PaymentState>> StoreUnderTest::transitions_seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

store::Db::TransitionObserver StoreUnderTest::observer() {
  return [this](PaymentState from, PaymentState to) {
    std::lock_guard lock(mu_);
    seen_.emplace_back(from, to);
  };
}

Payment StoreUnderTest::payment(const std::string& id) {
  auto p = read([&](store::Tx& tx) { return tx.find_payment_by_id(id); });
  REQUIRE_MESSAGE(p.has_value(), "no payment " << id);
  return *p;
}

void check_same_payment(const Payment& read, const Payment& written) {
  CAPTURE(written.id);
  CHECK(read.id == written.id);
  CHECK(read.tenant_id == written.tenant_id);
  CHECK(read.operation_type == written.operation_type);
  CHECK(read.operation_id == written.operation_id);
  CHECK(read.provider == written.provider);
  CHECK(read.client_key == written.client_key);
  CHECK(read.request_digest == written.request_digest);
  CHECK(read.amount_minor == written.amount_minor);
  CHECK(read.currency == written.currency);
  CHECK(read.payee == written.payee);
  CHECK(read.source == written.source);
  CHECK(read.description == written.description);
  CHECK(read.metadata == written.metadata);
  CHECK(read.state == written.state);
  CHECK(read.next_action == written.next_action);
  CHECK(read.next_attempt_at == written.next_attempt_at);
  CHECK(read.fence == written.fence);
  CHECK(read.lease_owner == written.lease_owner);
  CHECK(read.lease_expires_at == written.lease_expires_at);
  CHECK(read.attempt_count == written.attempt_count);
  CHECK(read.first_submit_at == written.first_submit_at);
  CHECK(read.last_submit_ended_at == written.last_submit_ended_at);
  CHECK(read.last_submit_started_at == written.last_submit_started_at);
  CHECK(read.budget_started_at == written.budget_started_at);
  CHECK(read.budget_attempts_base == written.budget_attempts_base);
  CHECK(read.vendor_reference == written.vendor_reference);
  CHECK(read.failure_code == written.failure_code);
  CHECK(read.failure_message == written.failure_message);
  CHECK(read.created_at == written.created_at);
  CHECK(read.updated_at == written.updated_at);
  CHECK(read.reconciliation.has_value() == written.reconciliation.has_value());
  if (read.reconciliation && written.reconciliation) {
    CHECK(read.reconciliation->case_id == written.reconciliation->case_id);
    CHECK(read.reconciliation->reason == written.reconciliation->reason);
    CHECK(read.reconciliation->status == written.reconciliation->status);
  }
}

JobResult run_job(store::Store& store, store::Store::Work work) {
  return wait_for([&](store::Store::Done done) { store.submit(std::move(work), std::move(done)); });
}

JobResult run_judged_job(store::Store& store, store::Store::JudgedWork work) {
  return wait_for(
      [&](store::Store::Done done) { store.submit_judged(std::move(work), std::move(done)); });
}

std::unique_ptr<StoreUnderTest> StoreUnderTest::open(Driver driver, UnixMillis now) {
  if (driver == Driver::sqlite) return std::make_unique<SqliteUnderTest>(now);
  auto db = postgres_database_or_skip();
  if (!db) return nullptr;
  return std::make_unique<PostgresUnderTest>(std::move(db), now);
}

}  // namespace payorch::test
