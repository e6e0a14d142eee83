// The baseline: the rows an intake writes (payment + payment.created outbox event), inserted by
// a plain loop through the project's own store code with the daemon's durability (WAL,
// synchronous=FULL) and one commit per row. The HTTP runs are compared against it, so it must
// do the same disk work per row that an un-batched daemon would.
#include <stdexcept>
#include <string>

#include "bench/intake_bench.h"
#include "core/digest.h"
#include "core/intent.h"
#include "core/payment.h"
#include "store/database.h"
#include "store/intake.h"
#include "store/payments.h"
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

}  // namespace

Result run_baseline(const Options& opts) {
  Result r;
  r.name = "baseline: sqlite insert, one commit per row";
  const std::string dir = make_run_dir(opts.work_dir, "baseline");
  const std::string path = dir + "/payorch.db";
  SystemClock clock;
  OsRandom rng;
  try {
    store::prepare_database(path, clock.now_ms());
    {
      store::Db db(path, store::Db::Mode::read_write);
      store::configure_connection(db, 5000);
      const std::int64_t warmup = warmup_count(opts.requests);
      const auto deadline = SteadyClock::now() + opts.time_cap;
      Samples samples;
      for (std::int64_t n = 0; n < opts.requests; ++n) {
        const auto start = SteadyClock::now();
        if (start >= deadline) {
          r.capped = true;
          break;
        }
        ++r.attempted;
        const UnixMillis now = clock.now_ms();
        const Payment p = intake_payment("baseline-" + std::to_string(n), now, rng);
        {
          store::Transaction tx(db);
          store::insert_payment(db, p);
          store::insert_outbox_event(db, EventType::created, p, now, rng);
          tx.commit();  // synchronous=FULL: returns once the WAL frame is on disk
        }
        ++r.created;
        if (n >= warmup) samples.add(start, SteadyClock::now());
      }
      summarize(r, std::move(samples));
    }
    const std::int64_t rows = count_payment_rows(path);
    if (rows != r.created)
      r.failures.push_back("payments table holds " + std::to_string(rows) + " rows after " +
                           std::to_string(r.created) + " commits");
  } catch (const std::exception& e) {
    r.failures.push_back(std::string("baseline: ") + e.what());
  }
  finish_run_dir(dir, opts, r);
  return r;
}

}  // namespace payorch::bench
