// The baselines: the rows an intake writes (payment + payment.created outbox event), inserted by
// a plain loop through the project's own store code with the daemon's durability (WAL,
// synchronous=FULL; on PostgreSQL, the server's own settings), one commit per row or N rows per
// commit. The HTTP runs are compared against them: one commit per row does the disk work of an
// un-batched daemon; N rows per commit is what a group commit of N could reach with no HTTP,
// JSON or engine around it.
#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench/intake_bench.h"
#include "core/digest.h"
#include "core/intent.h"
#include "core/payment.h"
#include "store/database.h"
#include "store/intake.h"
#include "store/payments.h"
#include "store/postgres/connection.h"
#include "store/postgres/migrations.h"
#include "store/postgres/payments.h"
#include "store/sqlite.h"
#include "util/os_random.h"
#include "util/system_clock.h"

namespace payorch::bench {
namespace {

// The same intent the HTTP clients send, with the fields an intake fills in.
Payment intake_payment(const std::string& operation_id, UnixMillis now, Random& rng) {
  Intent intent;
  intent.operation_id = operation_id;
  intent.amount_minor = 1234;
  intent.currency = "EUR";
  intent.payee = "merchant-1";
  intent.source = "tok_ok";
  // No provider in the request: the digest leaves it out and routing picks "sim".

  store::IntakeRequest req;
  req.tenant_id = "bench";
  req.provider = "sim";
  req.request_digest = request_digest(intent);
  req.intent = std::move(intent);
  return store::new_payment(req, now, rng);
}

// Times `commit_group` over opts.requests rows, rows_per_commit at a time, into `r`: a row's
// latency runs from the start of its commit group to the group's COMMIT.
void insert_rows(const Options& opts, int rows_per_commit,
                 const std::function<void(std::int64_t first, std::int64_t end)>& commit_group,
                 Result& r) {
  const std::int64_t warmup = warmup_count(opts.requests);
  const auto deadline = SteadyClock::now() + opts.time_cap;
  Samples samples;
  for (std::int64_t n = 0; n < opts.requests;) {
    const auto start = SteadyClock::now();
    if (start >= deadline) {
      r.capped = true;
      break;
    }
    const std::int64_t group_end = std::min(opts.requests, n + rows_per_commit);
    commit_group(n, group_end);
    const auto end = SteadyClock::now();
    for (std::int64_t i = n; i < group_end; ++i)
      if (i >= warmup) samples.add(start, end);
    r.attempted += group_end - n;
    r.ok += group_end - n;
    n = group_end;
  }
  summarize(r, std::move(samples));
}

}  // namespace

Result run_baseline(const Options& opts, int rows_per_commit, const std::string& postgres_url) {
  Result r;
  const bool postgres = !postgres_url.empty();
  r.name = std::string("baseline: ") + (postgres ? "postgres" : "sqlite") + " insert, " +
           (rows_per_commit == 1 ? "one commit per row"
                                 : std::to_string(rows_per_commit) + " rows per commit");
  SystemClock clock;
  OsRandom rng;
  auto row = [&](std::int64_t i) {
    const UnixMillis now = clock.now_ms();
    return std::pair{intake_payment("baseline-" + std::to_string(i), now, rng), now};
  };
  auto check_rows = [&r](const DatabaseRef& db) {
    const std::int64_t rows = count_payment_rows(db);
    if (rows != r.ok)
      r.failures.push_back("payments table holds " + std::to_string(rows) + " rows after " +
                           std::to_string(r.ok) + " committed");
  };
  if (postgres) {
    try {
      store::pg::prepare_database(postgres_url, clock.now_ms());
      {
        store::pg::Connection conn(postgres_url);
        insert_rows(opts, rows_per_commit, [&](std::int64_t first, std::int64_t end) {
          conn.exec("BEGIN");
          for (std::int64_t i = first; i < end; ++i) {
            const auto [p, now] = row(i);
            if (!store::pg::insert_created(conn, p, now, rng))
              throw std::runtime_error("payment " + p.id + " was not inserted");
          }
          conn.commit();  // waits for what the server's synchronous_commit asks
        }, r);
      }
      check_rows({.sqlite_path = {}, .postgres_url = postgres_url});
    } catch (const std::exception& e) {
      r.failures.push_back(std::string("baseline: ") + e.what());
    }
    return r;
  }
  const std::string dir = make_run_dir(opts.work_dir, "baseline" + std::to_string(rows_per_commit));
  const std::string path = dir + "/payorch.db";
  try {
    store::prepare_database(path, clock.now_ms());
    {
      store::Db db(path, store::Db::Mode::read_write);
      store::configure_connection(db, 5000);
      insert_rows(opts, rows_per_commit, [&](std::int64_t first, std::int64_t end) {
        store::Transaction tx(db);
        for (std::int64_t i = first; i < end; ++i) {
          const auto [p, now] = row(i);
          if (!store::insert_created(db, p, now, rng))
            throw std::runtime_error("payment " + p.id + " was not inserted");
        }
        tx.commit();  // synchronous=FULL: returns once the WAL frames are on disk
      }, r);
    }
    check_rows({path});
  } catch (const std::exception& e) {
    r.failures.push_back(std::string("baseline: ") + e.what());
  }
  finish_run_dir(dir, opts, r);
  return r;
}

}  // namespace payorch::bench
