// The simulation's database on PostgreSQL: one database per seed, copied from a migrated
// template, on one connection; each transaction READ COMMITTED, as PgStore runs its jobs.
#include "dst/postgres_database.h"

#include <unistd.h>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "store/leases.h"
#include "store/postgres/migrations.h"
#include "store/postgres/pg_store.h"

namespace payorch::dst {
namespace {

namespace pg = store::pg;

// Every PostgresServer of this process names its databases apart from the others'.
std::atomic<int> servers{0};

class PostgresDatabase final : public Database {
public:
  explicit PostgresDatabase(PostgresServer& server) : server_(server), db_(server.create_database()) {
    try {
      open();
    } catch (...) {
      server_.drop_database(db_.name);
      throw;
    }
  }
  ~PostgresDatabase() override {
    tx_.reset();
    conn_.reset();
    server_.drop_database(db_.name);
  }

  store::Tx& tx() override { return *tx_; }
  void begin() override {
    actions_.clear();
    conn_->exec("BEGIN ISOLATION LEVEL READ COMMITTED");
  }
  void commit() override {
    conn_->commit();
    std::vector<std::function<void()>> actions;
    actions.swap(actions_);
    for (auto& action : actions) action();
  }
  void rollback() override {
    actions_.clear();
    if (conn_->ok() && conn_->in_transaction()) conn_->exec("ROLLBACK");
  }
  void crash() override {
    // A connection that dies mid-transaction is rolled back by its server process, but only
    // once that process notices, while the next connection may already claim (FOR UPDATE SKIP
    // LOCKED would skip the rows it still holds). The same rollback, sent before closing, ends
    // at a point the seed decides.
    rollback();
    tx_.reset();
    conn_.reset();
    actions_.clear();
    open();
  }
  std::int64_t rows_written() override {
    // The open transaction's own counts (pg_stat_xact_*), triggers' writes included.
    return conn_->exec("SELECT COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint"
                       " FROM pg_stat_xact_user_tables").integer(0, 0);
  }

  Snapshot snapshot() override {
    Snapshot s;
    const pg::Result r = conn_->exec(
        "SELECT id, state, fence, attempt_count, next_attempt_at,"
        " CASE WHEN last_submit_started_at IS NOT NULL AND (last_submit_ended_at IS NULL"
        "   OR last_submit_started_at > last_submit_ended_at) THEN 1 ELSE 0 END,"
        " amount_minor, currency,"
        " (SELECT COUNT(*) FROM reconciliation_cases c WHERE c.payment_id = payments.id),"
        " COALESCE(refund_of, ''), CASE WHEN deferred THEN 1 ELSE 0 END, amount_refunded_minor,"
        " amount_reserved_minor, COALESCE(lease_owner, ''), COALESCE(lease_expires_at, 0) FROM payments");
    for (int i = 0; i < r.rows(); ++i) {
      Row row;
      row.id = r.text(i, 0);
      row.state = *parse_payment_state(r.text(i, 1));
      row.fence = r.integer(i, 2);
      row.attempt_count = r.integer(i, 3);
      row.next_attempt_at = r.integer(i, 4);
      row.submit_in_flight = r.integer(i, 5) != 0;
      row.amount = r.integer(i, 6);
      row.currency = r.text(i, 7);
      row.cases = r.integer(i, 8);
      row.refund_of = r.text(i, 9);
      row.deferred = r.integer(i, 10) != 0;
      row.amount_refunded = r.integer(i, 11);
      row.amount_reserved = r.integer(i, 12);
      row.lease_owner = r.text(i, 13);
      row.lease_expires_at = r.integer(i, 14);
      s.rows[row.id] = std::move(row);
    }
    s.outbox_seq = conn_->exec("SELECT COALESCE(MAX(seq), 0) FROM outbox").integer(0, 0);
    return s;
  }

  std::vector<OutboxEntry> outbox_after(std::int64_t after) override {
    std::vector<OutboxEntry> out;
    const pg::Result r = conn_->exec("SELECT payment_id, type FROM outbox WHERE seq > $1 ORDER BY seq", {after});
    for (int i = 0; i < r.rows(); ++i) out.push_back(OutboxEntry{r.text(i, 0), r.text(i, 1)});
    return out;
  }

  std::vector<FinalRow> final_rows() override {
    std::vector<FinalRow> out;
    const pg::Result r = conn_->exec(
        "SELECT p.id, p.client_key, p.state,"
        " CASE WHEN EXISTS (SELECT 1 FROM reconciliation_cases c WHERE c.payment_id = p.id"
        "   AND c.status = 'open') THEN 1 ELSE 0 END,"
        " CASE WHEN EXISTS (SELECT 1 FROM outbox o WHERE o.payment_id = p.id"
        "   AND o.type IN ('payment.unknown', 'refund.unknown')) THEN 1 ELSE 0 END,"
        " COALESCE(p.refund_of, ''), CASE WHEN p.deferred THEN 1 ELSE 0 END, p.amount_minor,"
        " p.amount_refunded_minor"
        " FROM payments p ORDER BY p.id");  // id is COLLATE "C": SQLite's order
    for (int i = 0; i < r.rows(); ++i)
      out.push_back(FinalRow{r.text(i, 0), r.text(i, 1), *parse_payment_state(r.text(i, 2)),
                             r.integer(i, 3) != 0, r.integer(i, 4) != 0, r.text(i, 5),
                             r.integer(i, 6) != 0, r.integer(i, 7), r.integer(i, 8)});
    return out;
  }

  std::int64_t payments_escalated() override {
    return conn_->exec("SELECT COUNT(DISTINCT payment_id) FROM reconciliation_cases").integer(0, 0);
  }

  std::string integrity_check() override {
    if (!server_.has_amcheck()) return "ok";
    // Every B-tree index of the schema is consistent and holds every row of its table.
    try {
      conn_->exec(
          "SELECT bt_index_check(i.indexrelid, true) FROM pg_index i"
          " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
          " JOIN pg_namespace n ON n.oid = c.relnamespace"
          " WHERE a.amname = 'btree' AND n.nspname = 'public' ORDER BY c.relname");
    } catch (const pg::Error& e) {
      return e.what();
    }
    return "ok";
  }

  std::optional<UnixMillis> next_due() override {
    const pg::Result r = conn_->exec(
        "SELECT MIN(GREATEST(next_attempt_at, COALESCE(lease_expires_at, 0))) FROM payments WHERE " +
        std::string(store::has_automatic_work));
    return r.opt_integer(0, 0);
  }

  std::int64_t unsettled() override {
    return conn_->exec(
        // A DEFERRED refund waits for its payment, never for a case (the checker's concern).
        "SELECT COUNT(*) FROM payments p WHERE p.state IN ('PROCESSING','UNKNOWN') AND NOT p.deferred"
        " AND NOT EXISTS"
        " (SELECT 1 FROM reconciliation_cases c WHERE c.payment_id = p.id AND c.status = 'open')")
        .integer(0, 0);
  }

private:
  void open() {
    conn_.emplace(db_.url);
    tx_.emplace(*conn_, &actions_);
  }

  PostgresServer& server_;
  PostgresServer::Created db_;
  std::optional<pg::Connection> conn_;
  std::vector<std::function<void()>> actions_;  // the open transaction's after_commit actions
  std::optional<pg::PgTx> tx_;                   // over *conn_
};

}  // namespace

PostgresServer::PostgresServer(const std::string& url)
    : url_(url),
      prefix_("dst_" + std::to_string(::getpid()) + "_" + std::to_string(++servers)),
      admin_(url) {
  admin_.exec("CREATE DATABASE " + prefix_ + "_template TEMPLATE template0");
  try {
    // Migrated at the time the SQLite template is (sqlite_database.cpp).
    pg::prepare_database(url_of(prefix_ + "_template"), 1'700'000'000'000);
    pg::Connection conn(url_of(prefix_ + "_template"));
    try {
      conn.exec("CREATE EXTENSION IF NOT EXISTS amcheck");
      amcheck_ = true;
    } catch (const pg::Error&) {
      // Not installed, or not ours to create: no index checks.
    }
  } catch (...) {
    drop_database(prefix_ + "_template");
    throw;
  }
}

PostgresServer::~PostgresServer() { drop_database(prefix_ + "_template"); }

PostgresServer::Created PostgresServer::create_database() {
  const std::lock_guard lock(mu_);
  if (!admin_.ok()) admin_ = pg::Connection(url_);
  Created c;
  c.name = prefix_ + "_" + std::to_string(++databases_);
  c.url = url_of(c.name);
  // Names are ours ([a-z0-9_]): CREATE DATABASE takes no parameters.
  admin_.exec("CREATE DATABASE " + c.name + " TEMPLATE " + prefix_ + "_template");
  return c;
}

void PostgresServer::drop_database(const std::string& name) noexcept {
  try {
    const std::lock_guard lock(mu_);
    if (!admin_.ok()) admin_ = pg::Connection(url_);
    admin_.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  } catch (const std::exception&) {
    // Left on the server; a throwaway cluster takes it with it.
  }
}

std::string PostgresServer::url_of(const std::string& database) const {
  const std::size_t query = url_.find('?');
  const std::size_t slash = url_.rfind('/', query == std::string::npos ? std::string::npos : query);
  const std::size_t scheme = url_.find("://");
  if (slash == std::string::npos || scheme == std::string::npos || slash < scheme + 3)
    throw std::runtime_error("not a postgresql:// URI with a database: " + pg::redacted_url(url_));
  return url_.substr(0, slash + 1) + database + (query == std::string::npos ? "" : url_.substr(query));
}

std::unique_ptr<Database> open_postgres_database(PostgresServer& server) {
  return std::make_unique<PostgresDatabase>(server);
}

}  // namespace payorch::dst
