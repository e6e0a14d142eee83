// payorch-bench-pg-counters: what the sharded kept figures of schema/postgres/002 buy. On a
// throwaway cluster (tools/pg-cluster), N connections at once each write payments the way the
// store does (an intake: the payment and its event; then two transitions, each with its event:
// PROCESSING → UNKNOWN enters the exposure, UNKNOWN → SUCCEEDED leaves it), one transaction per
// step, against two databases: one migrated to schema 1 only (one figures row per key: every
// transaction queues on it) and one migrated to the latest schema (the rows sharded by backend).
// Prints transactions per second for each and their ratio, best of --rounds, and the median of
// the rounds' own ratios (steadier on a busy machine), and checks both databases' figures
// against a recount. A transaction lost to a deadlock or a serialization failure is run again,
// as the store does, and counted. The latest schema also gives each event its feed position
// (002's feed_pos and outbox_feed_order): the ratio is net of that cost.
//
//   payorch-bench-pg-counters [--connections 16] [--payments 200] [--rounds 5]
//
// --payments is per connection (three transactions each). Measured, never pass/fail.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/cli.h"
#include "bench/pg_cluster.h"
#include "core/clock.h"
#include "store/postgres/connection.h"
#include "store/postgres/figures.h"
#include "store/postgres/migrations.h"

namespace payorch::bench {
namespace {

using store::pg::Connection;

const std::string script = std::string(PAYORCH_SOURCE_DIR) + "/tools/pg-cluster";
constexpr UnixMillis t0 = 1'700'000'000'000;

// A new database of `cluster` migrated to `version`; its URI.
std::string migrated_database(BenchCluster& cluster, const std::string& name, int version) {
  const std::string url = cluster.create_database(name);
  std::vector<store::Migration> upto;
  for (const auto& m : store::pg::embedded_migrations())
    if (m.version <= version) upto.push_back(m);
  Connection c(url);
  store::pg::migrate(c, upto, t0);
  return url;
}

void event(Connection& c, const std::string& id, const std::string& type) {
  c.exec("INSERT INTO outbox (event_id, tenant_id, payment_id, type, payload, created_at,"
         " next_attempt_at) VALUES ('evt_' || $1 || $2, 'acme', $1, $2, '{}', $3, $3)",
         {id, type, t0});
}

// Runs `work` in a transaction on `c`, again after a deadlock or a serialization failure (as
// the store does); returns how many runs were lost to one.
template <class Work>
int transaction(Connection& c, Work&& work) {
  for (int lost = 0;; ++lost) {
    try {
      c.exec("BEGIN");
      work();
      c.exec("COMMIT");
      return lost;
    } catch (const store::pg::Error& e) {
      if (!e.retryable()) throw;
      c.exec("ROLLBACK");
    }
  }
}

// One connection's share: `payments` payments, each through three transactions. Returns the
// runs lost to conflicts.
int writer(const std::string& url, int who, int payments) {
  Connection c(url);
  int lost = 0;
  for (int i = 0; i < payments; ++i) {
    const std::string id = "pay_" + std::to_string(who) + "_" + std::to_string(i);
    lost += transaction(c, [&] {
      c.exec("INSERT INTO payments (id, tenant_id, operation_type, operation_id, provider, client_key,"
             " request_digest, amount_minor, currency, payee, source, state, next_attempt_at,"
             " created_at, updated_at) VALUES ($1, 'acme', 'payment', $1, 'sim', 'ck_' || $1,"
             " 'sha256:x', 1000, 'EUR', 'merchant-1', 'tok_ok', 'PROCESSING', $2, $2, $2)",
             {id, t0});
      event(c, id, "payment.created");
    });
    lost += transaction(c, [&] {
      c.exec("UPDATE payments SET state = 'UNKNOWN', last_submit_started_at = $2,"
             " last_submit_ended_at = $2 WHERE id = $1", {id, t0 + 1});
      event(c, id, "payment.unknown");
    });
    lost += transaction(c, [&] {
      c.exec("UPDATE payments SET state = 'SUCCEEDED' WHERE id = $1", {id});
      event(c, id, "payment.succeeded");
    });
  }
  return lost;
}

struct Figure {
  double per_second = 0;
  int lost = 0;  // runs lost to deadlocks or serialization failures, run again
};

// Transactions per second of `connections` writers at once on `url`.
Figure measure(const std::string& url, int connections, int payments) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(connections));
  std::vector<int> lost(static_cast<std::size_t>(connections));
  for (int w = 0; w < connections; ++w)
    threads.emplace_back([&, w] {
      try {
        lost[static_cast<std::size_t>(w)] = writer(url, w, payments);
      } catch (...) {
        errors[static_cast<std::size_t>(w)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Figure f;
  f.per_second = 3.0 * connections * payments / seconds;
  for (int n : lost) f.lost += n;
  return f;
}

// Empty the database's payments between rounds, so that each round starts alike.
void reset(const std::string& url) {
  Connection c(url);
  c.exec("BEGIN");
  c.exec("ALTER TABLE payments DISABLE TRIGGER USER");
  c.exec("DELETE FROM outbox");
  c.exec("DELETE FROM payments");
  c.exec("ALTER TABLE payments ENABLE TRIGGER USER");
  c.exec("DELETE FROM exposure");
  c.exec("UPDATE payment_counts SET count = 0");
  c.exec("COMMIT");
}

// The recount's differences (none expected) and the SUCCEEDED count.
void check(const std::string& name, const std::string& url, std::int64_t expected) {
  Connection c(url);
  const auto differences = store::pg::exposure_differences(c);
  const auto counts = store::pg::status_counts(c);
  const std::int64_t succeeded = counts.payments_by_state.at("SUCCEEDED");
  std::printf("  %s: %zu exposure difference(s), %lld succeeded (expected %lld)\n", name.c_str(),
              differences.size(), static_cast<long long>(succeeded), static_cast<long long>(expected));
  if (!differences.empty() || succeeded != expected)
    throw std::runtime_error(name + ": the kept figures disagree with the payments");
}

int run(int argc, char** argv) {
  int connections = 16;
  int payments = 200;
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + ": needs a value");
    const std::string value = argv[++i];
    if (flag == "--connections") connections = static_cast<int>(parse_positive(flag, value, 128));
    else if (flag == "--payments") payments = static_cast<int>(parse_positive(flag, value, 1'000'000));
    else if (flag == "--rounds") rounds = static_cast<int>(parse_positive(flag, value, 100));
    else throw std::invalid_argument("unknown flag " + flag);
  }
  // Durability off, as the test clusters run: the figures' contention, not the disk, is measured.
  BenchCluster cluster(script, "/tmp", false);
  const std::string one_row = migrated_database(cluster, "one_row", 1);
  const std::string sharded =
      migrated_database(cluster, "sharded", store::pg::embedded_migrations().back().version);
  std::printf("payorch-bench-pg-counters: %d connections x %d payments x 3 transactions, best of %d\n",
              connections, payments, rounds);
  Figure best_one;
  Figure best_sharded;
  std::vector<double> ratios;  // each round's sharded / one row
  for (int r = 1; r <= rounds; ++r) {
    reset(one_row);
    reset(sharded);
    // Each goes first every other round, so that neither always gets the warmer machine.
    Figure a;
    Figure b;
    if (r % 2 == 1) {
      a = measure(one_row, connections, payments);
      b = measure(sharded, connections, payments);
    } else {
      b = measure(sharded, connections, payments);
      a = measure(one_row, connections, payments);
    }
    std::printf("  round %d: one row per key %.0f tx/s (%d run again), sharded %.0f tx/s (%d run again)\n",
                r, a.per_second, a.lost, b.per_second, b.lost);
    ratios.push_back(b.per_second / a.per_second);
    if (a.per_second > best_one.per_second) best_one = a;
    if (b.per_second > best_sharded.per_second) best_sharded = b;
  }
  check("one row per key", one_row, std::int64_t{connections} * payments);
  check("sharded", sharded, std::int64_t{connections} * payments);
  std::sort(ratios.begin(), ratios.end());
  const std::size_t mid = ratios.size() / 2;
  const double median = ratios.size() % 2 == 1 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
  std::printf("one row per key: %.0f tx/s\nsharded:         %.0f tx/s\nratio sharded / one row: %.2f"
              " (best rounds), %.2f (median of the rounds' ratios)\n",
              best_one.per_second, best_sharded.per_second,
              best_sharded.per_second / best_one.per_second, median);
  return 0;
}

}  // namespace
}  // namespace payorch::bench

int main(int argc, char** argv) {
  if (payorch::bench::asks_for_help(argc, argv)) {
    std::printf("usage: payorch-bench-pg-counters [--connections N] [--payments N] [--rounds N]\n");
    return 0;
  }
  try {
    return payorch::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payorch-bench-pg-counters: %s\n", e.what());
    return 1;
  }
}
