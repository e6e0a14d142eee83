#include "storage/pg_fault_loop.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <mutex>

#include "store/postgres/connection.h"
#include "store/postgres/figures.h"
#include "store/postgres/migrations.h"
#include "support/process.h"
#include "util/system_clock.h"

namespace payorch::test {

config::Config postgres_storage_test_config(const std::string& dir, const std::string& url,
                                            std::size_t pool_size) {
  config::Config cfg = storage_test_config(dir + "/payorch.db");
  cfg.database.driver = "postgres";
  cfg.database.url = url;
  cfg.database.pool_size = pool_size;
  return cfg;
}

std::string_view to_string(Pool pool) { return pool == Pool::warm ? "warm pool" : "cold pool"; }

std::string CutReport::describe() const {
  std::string out = name + " [cut " + std::string(to_string(mode)) + ", " +
                    std::string(to_string(pool)) + "]: " +
                    std::to_string(iterations) + " iterations (" + std::to_string(statements) +
                    " statements uncut), " + std::to_string(cuts) + " cuts, " +
                    std::to_string(refused) + " refused (503 / job failed), " +
                    std::to_string(committed_despite_cut) + " committed despite a cut, " +
                    std::to_string(replays_after_unknown_commit) +
                    " replays after an unknown commit, " + std::to_string(checks) +
                    " database checks ok; cuts by statement:";
  for (const auto& [statement, n] : cuts_by_statement) out += " " + statement + "=" + std::to_string(n);
  return out;
}

namespace {

// The statement's first word: "COMMIT", "BEGIN", "INSERT", "WITH", ...
std::string verb_of(const std::string& sql) {
  const std::size_t start = sql.find_first_not_of(" \n\t");
  if (start == std::string::npos) return "?";
  return sql.substr(start, sql.find_first_of(" \n\t(", start) - start);
}

}  // namespace

PostgresDatabase* loop_database(const std::string& key) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  if (shared_postgres() == nullptr) {
    postgres_database_or_skip();  // prints the skip marker and the reason
    return nullptr;
  }
  // Made after the cluster, so destroyed before it at exit: dropped while the server runs.
  static std::map<std::string, std::unique_ptr<PostgresDatabase>> databases;
  auto& db = databases[key];
  if (!db) {
    auto fresh = postgres_database_or_skip();
    if (!fresh) return nullptr;
    store::pg::prepare_database(fresh->url(), SystemClock().now_ms());
    db = std::move(fresh);
  }
  return db.get();
}

CutReport run_cut_loop(const std::string& name, CutMode mode, Pool pool, PostgresDatabase& db,
                       const CutIterationBody& body, int max_iterations) {
  PgCutProxy proxy(db.url());
  const std::string dir = storage_temp_dir("payorch-pg-storage");
  CutReport report;
  report.name = name;
  report.mode = mode;
  report.pool = pool;
  for (std::uint64_t n = 1;; ++n) {
    if (static_cast<int>(n) > max_iterations) {
      FAIL(name << " [cut " << to_string(mode) << ", " << to_string(pool) << "]: still cutting after "
                << n - 1 << " iterations");
      break;
    }
    CutIteration it;
    it.url = proxy.url_for(db.url());
    it.direct_url = db.url();
    it.dir = dir;
    it.mode = mode;
    it.pool = pool;
    it.arm = [&proxy, n, mode] { proxy.arm(n, mode); };
    it.disarm = [&proxy] { proxy.disarm(); };
    it.cut_hit = [&proxy] { return proxy.cut_hit(); };
    it.cut_statement = [&proxy] { return proxy.cut_statement(); };
    it.report = &report;
    Answer answer = Answer::other;
    {
      INFO(name << " [cut " << to_string(mode) << ", " << to_string(pool) << "] at statement N=" << n);
      answer = body(it);
    }
    proxy.disarm();
    const bool hit = proxy.cut_hit();
    ++report.iterations;
    if (hit) {
      ++report.cuts;
      ++report.cuts_by_statement[verb_of(proxy.cut_statement())];
    }
    if (answer == Answer::refused) ++report.refused;
    if (answer == Answer::committed && hit) ++report.committed_despite_cut;
    if (!hit) {
      CHECK_MESSAGE(answer == Answer::committed, name << ": the iteration that reached no cut did not commit");
      report.statements = proxy.statements_seen();
      break;
    }
  }
  std::filesystem::remove_all(dir);
  MESSAGE(report.describe());
  std::printf("storage_faults_postgres: %s\n", report.describe().c_str());
  std::fflush(stdout);
  return report;
}

std::string figure_differences(const std::string& url) {
  store::pg::Connection conn(url);
  std::string out;
  for (const std::string& line : store::pg::exposure_differences(conn)) out += "exposure " + line + "\n";
  // payment_counts against the payments, by state (schema/postgres/002: summed over shards).
  const store::pg::Result counts = conn.exec(
      "SELECT state, COALESCE(k.n, 0), COALESCE(r.n, 0) FROM"
      " (SELECT state, SUM(count)::bigint AS n FROM payment_counts GROUP BY state) k"
      " FULL JOIN (SELECT state, COUNT(*)::bigint AS n FROM payments GROUP BY state) r USING (state)"
      " WHERE COALESCE(k.n, 0) <> COALESCE(r.n, 0)");
  for (int row = 0; row < counts.rows(); ++row)
    out += "payments " + counts.text(row, 0) + ": kept " + counts.text(row, 1) + ", recounted " +
           counts.text(row, 2) + "\n";
  return out;
}

std::map<std::string, std::int64_t> table_counts(PostgresProbe& db) {
  std::map<std::string, std::int64_t> out;
  for (const char* table : {"payments", "outbox", "callback_inbox", "reconciliation_cases",
                            "idempotency_conflicts"})
    out[table] = db.count(std::string("SELECT count(*) FROM ") + table);
  return out;
}

std::string value_of(PostgresProbe& db, const std::string& sql, const std::vector<std::string>& params) {
  const std::vector<SqlRow> rows = db.query(sql, params);
  if (rows.empty() || rows.front().empty()) return "";
  return rows.front().begin()->second.value_or("NULL");
}

}  // namespace payorch::test
