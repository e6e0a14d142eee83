// The simulation's database on SQLite: one file per seed, copied from a template migrated once
// per process, on one connection in exclusive locking mode (the daemon's single writer).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "dst/database.h"
#include "store/database.h"
#include "store/leases.h"
#include "store/sqlite.h"
#include "store/sqlite_store.h"

namespace payorch::dst {
namespace {

namespace fs = std::filesystem;

// The template database: migrated once per process, copied for every seed.
std::string template_path() {
  static std::once_flag once;
  static std::string path;
  std::call_once(once, [] {
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const fs::path dir = base / ("payorch-dst-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    path = (dir / "template.db").string();
    store::prepare_database(path, 1'700'000'000'000);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::path(path).parent_path(), ec);
    });
  });
  return path;
}

class SqliteDatabase final : public Database {
public:
  explicit SqliteDatabase(std::uint64_t seed)
      : path_((fs::path(template_path()).parent_path() / ("seed-" + std::to_string(seed) + ".db")).string()) {
    remove_files();
    fs::copy_file(template_path(), path_);
    open();
  }
  ~SqliteDatabase() override {
    txn_.reset();
    tx_.reset();
    db_.reset();
    remove_files();
  }

  store::Tx& tx() override { return *tx_; }
  void begin() override { txn_.emplace(*db_); }
  void commit() override {
    txn_->commit();
    txn_.reset();
  }
  void rollback() override { txn_.reset(); }
  void crash() override {
    txn_.reset();
    tx_.reset();
    db_.reset();
    open();
  }
  std::int64_t rows_written() override { return db_->total_changes(); }

  Snapshot snapshot() override {
    Snapshot s;
    auto st = db_->prepare(
        "SELECT id, state, fence, attempt_count, next_attempt_at, "
        "last_submit_started_at IS NOT NULL AND (last_submit_ended_at IS NULL OR last_submit_started_at > last_submit_ended_at), "
        "amount_minor, currency,"
        " (SELECT COUNT(*) FROM reconciliation_cases c WHERE c.payment_id = payments.id),"
        " COALESCE(refund_of, ''), deferred, amount_refunded_minor, amount_reserved_minor,"
        " COALESCE(lease_owner, ''), COALESCE(lease_expires_at, 0) FROM payments");
    while (st.step()) {
      Row r;
      r.id = st.col_text(0);
      r.state = *parse_payment_state(st.col_text(1));
      r.fence = st.col_int(2);
      r.attempt_count = st.col_int(3);
      r.next_attempt_at = st.col_int(4);
      r.submit_in_flight = st.col_int(5) != 0;
      r.amount = st.col_int(6);
      r.currency = st.col_text(7);
      r.cases = st.col_int(8);
      r.refund_of = st.col_text(9);
      r.deferred = st.col_int(10) != 0;
      r.amount_refunded = st.col_int(11);
      r.amount_reserved = st.col_int(12);
      r.lease_owner = st.col_text(13);
      r.lease_expires_at = st.col_int(14);
      s.rows[r.id] = r;
    }
    auto q = db_->prepare("SELECT COALESCE(MAX(seq), 0) FROM outbox");
    q.step();
    s.outbox_seq = q.col_int(0);
    return s;
  }

  std::vector<OutboxEntry> outbox_after(std::int64_t after) override {
    std::vector<OutboxEntry> out;
    auto st = db_->prepare("SELECT payment_id, type FROM outbox WHERE seq > ?1 ORDER BY seq");
    st.bind(1, after);
    while (st.step()) out.push_back(OutboxEntry{st.col_text(0), st.col_text(1)});
    return out;
  }

  std::vector<FinalRow> final_rows() override {
    std::vector<FinalRow> out;
    auto st = db_->prepare(
        "SELECT p.id, p.client_key, p.state,"
        " EXISTS (SELECT 1 FROM reconciliation_cases c WHERE c.payment_id = p.id AND c.status = 'open'),"
        " EXISTS (SELECT 1 FROM outbox o WHERE o.payment_id = p.id"
        "   AND o.type IN ('payment.unknown', 'refund.unknown')),"
        " COALESCE(p.refund_of, ''), p.deferred, p.amount_minor, p.amount_refunded_minor"
        " FROM payments p ORDER BY p.id");
    while (st.step())
      out.push_back(FinalRow{st.col_text(0), st.col_text(1), *parse_payment_state(st.col_text(2)),
                             st.col_int(3) != 0, st.col_int(4) != 0, st.col_text(5), st.col_int(6) != 0,
                             st.col_int(7), st.col_int(8)});
    return out;
  }

  std::int64_t payments_escalated() override {
    auto st = db_->prepare("SELECT COUNT(DISTINCT payment_id) FROM reconciliation_cases");
    st.step();
    return st.col_int(0);
  }

  std::string integrity_check() override {
    auto st = db_->prepare("PRAGMA integrity_check");
    if (!st.step()) return "PRAGMA integrity_check returned nothing";
    return st.col_text(0);
  }

  std::optional<UnixMillis> next_due() override {
    auto st = db_->prepare(
        "SELECT MIN(MAX(next_attempt_at, COALESCE(lease_expires_at, 0))) FROM payments WHERE " +
        std::string(store::has_automatic_work));
    if (st.step() && !st.col_null(0)) return st.col_int(0);
    return std::nullopt;
  }

  std::int64_t unsettled() override {
    auto st = db_->prepare(
        // A DEFERRED refund waits for its payment, never for a case (the checker's concern).
        "SELECT COUNT(*) FROM payments p WHERE p.state IN ('PROCESSING','UNKNOWN') AND p.deferred = 0"
        " AND NOT EXISTS"
        " (SELECT 1 FROM reconciliation_cases c WHERE c.payment_id = p.id AND c.status = 'open')");
    st.step();
    return st.col_int(0);
  }

private:
  void remove_files() {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::error_code ec;
      fs::remove(path_ + suffix, ec);
    }
  }

  void open() {
    db_ = std::make_unique<store::Db>(path_, store::Db::Mode::read_write);
    store::configure_connection(*db_, 1000);
    // One connection, as the daemon's single writer; the process is the only one on the file
    // (the instance lock), so SQLite's file locks are taken once and kept.
    db_->exec("PRAGMA locking_mode=EXCLUSIVE");
    tx_.emplace(*db_);
  }

  std::string path_;
  std::unique_ptr<store::Db> db_;
  std::optional<store::SqliteTx> tx_;         // over *db_
  std::optional<store::Transaction> txn_;     // the open transaction, if any
};

}  // namespace

std::unique_ptr<Database> open_sqlite_database(std::uint64_t seed) {
  return std::make_unique<SqliteDatabase>(seed);
}

}  // namespace payorch::dst
