#include "bench/pgbench_run.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <stdexcept>

#include "store/postgres/connection.h"
#include "support/process.h"

namespace payorch::bench {
namespace {

using namespace std::chrono_literals;

// payments' hot columns (schema/postgres/001_initial.sql): the text key, the business key and
// the vendor key as unique constraints, the due index the engine claims by.
constexpr const char* table_sql =
    "CREATE TABLE pgbench_payments ("
    "  id TEXT COLLATE \"C\" PRIMARY KEY,"
    "  tenant_id TEXT COLLATE \"C\" NOT NULL,"
    "  operation_id TEXT COLLATE \"C\" NOT NULL,"
    "  provider TEXT COLLATE \"C\" NOT NULL,"
    "  client_key TEXT COLLATE \"C\" NOT NULL,"
    "  request_digest TEXT NOT NULL,"
    "  amount_minor BIGINT NOT NULL,"
    "  currency TEXT COLLATE \"C\" NOT NULL,"
    "  payee TEXT NOT NULL,"
    "  source TEXT NOT NULL,"
    "  state TEXT COLLATE \"C\" NOT NULL,"
    "  next_attempt_at BIGINT NOT NULL,"
    "  created_at BIGINT NOT NULL,"
    "  updated_at BIGINT NOT NULL,"
    "  UNIQUE (tenant_id, operation_id),"
    "  UNIQUE (provider, client_key))";
constexpr const char* due_index_sql =
    "CREATE INDEX pgbench_payments_due ON pgbench_payments (provider, next_attempt_at, id) "
    "WHERE state IN ('PROCESSING', 'UNKNOWN')";

// One transaction: one row with random keys (as payorch's ids and client keys are).
constexpr const char* script =
    "INSERT INTO pgbench_payments VALUES ("
    "'pay_' || md5(random()::text || clock_timestamp()::text), 'bench', gen_random_uuid()::text,"
    " 'sim', 'ck_' || md5(random()::text || clock_timestamp()::text),"
    " 'sha256:' || md5(random()::text), 1234, 'EUR', 'merchant-1', 'tok_ok', 'PROCESSING',"
    " (extract(epoch FROM clock_timestamp()) * 1000)::bigint,"
    " (extract(epoch FROM clock_timestamp()) * 1000)::bigint,"
    " (extract(epoch FROM clock_timestamp()) * 1000)::bigint);\n";

}  // namespace

std::string find_pgbench() {
  for (const char* path : {"/usr/lib/postgresql/15/bin/pgbench", "/usr/bin/pgbench", "/usr/local/bin/pgbench"})
    if (::access(path, X_OK) == 0) return path;
  return "";
}

Result run_pgbench(const PgbenchSpec& spec) {
  Result r;
  r.name = "baseline: pgbench, one INSERT per transaction, c=" + std::to_string(spec.clients);
  r.concurrency = spec.clients;
  try {
    if (spec.program.empty()) throw std::runtime_error("pgbench is not installed (postgresql-15 ships it)");
    {
      store::pg::Connection admin(spec.admin_url);
      admin.exec(table_sql);
      admin.exec(due_index_sql);
    }
    const std::string script_path = spec.dir + "/pgbench-insert.sql";
    const std::string pass_path = spec.dir + "/pgpass";
    test::write_file(script_path, script);
    // The password in a file only this user reads, not on a command line.
    test::write_file(pass_path, spec.host + ":" + std::to_string(spec.port) + ":" + spec.database +
                                    ":payorch:" + spec.password + "\n");
    ::chmod(pass_path.c_str(), 0600);
    std::vector<std::string> argv = spec.prefix;
    argv.insert(argv.end(), {"/usr/bin/env", "PGPASSFILE=" + pass_path, "PGSSLMODE=disable", "PGGSSENCMODE=disable",
                             spec.program, "--no-vacuum", "--client", std::to_string(spec.clients),
                             "--jobs", "2", "--time", std::to_string(spec.duration.count()),
                             "--file", script_path, "--host", spec.host, "--port",
                             std::to_string(spec.port), "--username", "payorch", spec.database});
    const test::CommandResult out =
        test::run_to_completion(argv, spec.dir + "/pgbench.out", spec.duration + 120s);
    std::smatch m;
    if (!out.status.exited || out.status.code != 0 ||
        !std::regex_search(out.output, m, std::regex(R"(tps = ([0-9.]+))")))
      throw std::runtime_error("pgbench " + out.status.describe() + ": " + out.output.substr(0, 600));
    r.per_second = std::strtod(m[1].str().c_str(), nullptr);
    std::smatch n;
    if (std::regex_search(out.output, n, std::regex(R"(transactions actually processed: ([0-9]+))")))
      r.attempted = r.ok = r.measured = std::strtoll(n[1].str().c_str(), nullptr, 10);
  } catch (const std::exception& e) {
    r.failures.push_back(e.what());
  }
  return r;
}

}  // namespace payorch::bench
