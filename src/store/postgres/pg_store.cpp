#include "store/postgres/pg_store.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <utility>

#include "store/postgres/callbacks.h"
#include "store/postgres/cases.h"
#include "store/postgres/figures.h"
#include "store/postgres/history.h"
#include "store/postgres/leases.h"
#include "store/postgres/outbox.h"
#include "store/postgres/payments.h"
#include "store/postgres/refunds.h"
#include "store/postgres/resolution.h"
#include "store/postgres/settlement.h"
#include "store/postgres/transitions.h"
#include "util/system_clock.h"

namespace payorch::store::pg {
namespace {

const SystemClock system_clock;

// A refusal of the job's own data (a CHECK, a constraint, a trigger's RAISE, a bad value):
// SQLite's CONSTRAINT, answered `rejected`; any other SQLSTATE is the database failing.
bool refusal(const std::string& sqlstate) {
  const std::string_view cls = std::string_view(sqlstate).substr(0, 2);
  return cls == "22" || cls == "23" || cls == "P0";
}

}  // namespace

const std::vector<std::string_view>& pg_storage_error_kinds() {
  static const std::vector<std::string_view> kinds{"busy", "connection_lost", "commit_unknown",
                                                   "other"};
  return kinds;
}

// pool_size connections, opened when first needed and again once one breaks. While the database
// cannot be reached, new connections are attempted at most once per backoff (ReconnectBackoff):
// in between, acquire() fails at once, so each job costs one quick failure rather than a
// connect timeout, and a server coming back is not met by every thread's attempts at once.
class PgStore::Pool {
public:
  Pool(std::string url, std::size_t size, const Clock& clock, ReconnectBackoff backoff,
       const StoreMetrics& metrics)
      : url_(std::move(url)), clock_(clock), backoff_(backoff), metrics_(metrics), idle_(size) {}

  // A connection for one transaction, returned to the pool when the lease ends.
  class Lease {
  public:
    Lease(Pool& pool, std::unique_ptr<Connection> conn, bool reused)
        : pool_(&pool), conn_(std::move(conn)), reused_(reused) {}
    Lease(Lease&& o) noexcept
        : pool_(std::exchange(o.pool_, nullptr)), conn_(std::move(o.conn_)), reused_(o.reused_) {}
    ~Lease() {
      if (pool_) pool_->give_back(std::move(conn_));
    }
    Lease& operator=(Lease&&) = delete;
    Connection& operator*() { return *conn_; }
    // Taken from the pool rather than opened for this lease: it may have broken while idle (a
    // server restart), which libpq learns only when it next talks.
    bool reused() const { return reused_; }

  private:
    Pool* pool_;
    std::unique_ptr<Connection> conn_;
    bool reused_;
  };

  // Waits for a free slot (the wait is observed as payorch_store_pool_wait_seconds); throws
  // pg::Error (connection_lost) when a new connection fails or the last attempt failed less
  // than a backoff ago. `fresh`: open a new connection even if one is idle.
  Lease acquire(bool fresh = false) {
    std::unique_ptr<Connection> conn;
    const MonotonicTime asked = clock_.monotonic();
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return idle_ > 0; });
      --idle_;
      if (!fresh && !free_.empty()) {
        conn = std::move(free_.back());
        free_.pop_back();
      }
    }
    metrics_.waited_for_connection(std::chrono::duration<double>(clock_.monotonic() - asked).count());
    if (conn && conn->ok()) return Lease(*this, std::move(conn), true);
    try {
      conn = connect();
    } catch (...) {
      give_back(nullptr);
      throw;
    }
    return Lease(*this, std::move(conn), false);
  }

  // Closes the idle connections: one of them broke while idle, so the others likely did too
  // (the server restarted or failed over).
  void discard_idle() {
    std::vector<std::unique_ptr<Connection>> gone;
    std::lock_guard lock(mu_);
    gone.swap(free_);
  }

private:
  std::unique_ptr<Connection> connect() {
    const MonotonicTime now = clock_.monotonic();
    {
      std::lock_guard lock(mu_);
      if (retry_at_ && now < *retry_at_)
        throw Error(ErrorKind::connection_lost, "", "",
                    "the database is unreachable (next connection attempt in " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           *retry_at_ - now).count()) +
                        " ms): " + last_error_);
    }
    try {
      auto conn = std::make_unique<Connection>(url_);
      std::lock_guard lock(mu_);
      retry_at_.reset();
      delay_ = Millis{0};
      return conn;
    } catch (const Error& e) {
      std::lock_guard lock(mu_);
      delay_ = delay_.count() == 0 ? backoff_.initial : std::min(delay_ * 2, backoff_.max);
      retry_at_ = clock_.monotonic() + delay_;
      last_error_ = e.what();
      throw;
    }
  }

  void give_back(std::unique_ptr<Connection> conn) {
    {
      std::lock_guard lock(mu_);
      if (conn && conn->ok()) free_.push_back(std::move(conn));
      ++idle_;
    }
    cv_.notify_one();
  }

  std::string url_;
  const Clock& clock_;
  const ReconnectBackoff backoff_;
  const StoreMetrics& metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t idle_;  // slots free: pooled connections plus ones not opened
  std::vector<std::unique_ptr<Connection>> free_;
  std::optional<MonotonicTime> retry_at_;  // no new connection before this; under mu_
  Millis delay_{0};                        // the current backoff; under mu_
  std::string last_error_;                 // why the last attempt failed; under mu_
};

void PgTx::after_commit(std::function<void()> action) {
  if (!after_commit_) throw std::logic_error("after_commit: a read commits nothing");
  after_commit_->push_back(std::move(action));
}

RefundIntakeOutcome PgTx::record_refund_intake(const RefundIntakeRequest& req, UnixMillis now, Random& rng) {
  return pg::record_refund_intake(conn_, req, now, rng);
}

std::optional<Payment> PgTx::find_refund(const std::string& tenant_id, const std::string& operation_id) {
  return pg::find_refund(conn_, tenant_id, operation_id);
}

std::vector<Payment> PgTx::list_refunds(const std::string& payment_id) {
  return pg::list_refunds(conn_, payment_id);
}

std::vector<std::pair<RefundState, std::int64_t>> PgTx::count_refunds() {
  return pg::count_refunds(conn_);
}

IntakeOutcome PgTx::record_intake(const IntakeRequest& req, UnixMillis now, Random& rng) {
  return pg::record_intake(conn_, req, now, rng);
}

std::optional<Payment> PgTx::find_payment_by_client_key(const std::string& provider, const std::string& client_key) {
  return pg::find_payment_by_client_key(conn_, provider, client_key);
}

std::vector<HistoryEntry> PgTx::payment_history(const std::string& payment_id) {
  return pg::payment_history(conn_, payment_id);
}

std::vector<HistoryEvent> PgTx::outbox_history(const std::string& payment_id) {
  return pg::outbox_history(conn_, payment_id);
}

std::vector<ReconciliationCase> PgTx::cases_of_row(const std::string& row_id) {
  return pg::cases_of_row(conn_, row_id);
}

std::optional<Payment> PgTx::find_payment_by_id(const std::string& id) {
  return pg::find_payment_by_id(conn_, id);
}

std::optional<Payment> PgTx::find_payment_by_operation(const std::string& tenant_id, const std::string& operation_type, const std::string& operation_id) {
  return pg::find_payment_by_operation(conn_, tenant_id, operation_type, operation_id);
}

PaymentPage PgTx::list_payments(const std::string& tenant_id, std::optional<PaymentState> state, int limit, const std::optional<std::string>& cursor) {
  return pg::list_payments(conn_, tenant_id, state, limit, cursor);
}

std::vector<Lease> PgTx::claim_due(const std::string& owner, UnixMillis now, Millis lease, const std::vector<ClaimQuota>& quotas, int max) {
  return pg::claim_due(conn_, owner, now, lease, quotas, max);
}
bool PgTx::record_call_started(const std::string& payment_id, std::int64_t fence, bool submit, UnixMillis now, Payment* claimed) {
  return pg::record_call_started(conn_, payment_id, fence, submit, now, claimed);
}
std::vector<StartedCall> PgTx::start_calls(const std::vector<CallStart>& calls, UnixMillis now, UnixMillis held_until) {
  return pg::start_calls(conn_, calls, now, held_until);
}
bool PgTx::undo_call_started(const std::string& payment_id, std::int64_t fence, const CallMarks& before, UnixMillis next_attempt_at) {
  return pg::undo_call_started(conn_, payment_id, fence, before, next_attempt_at);
}
bool PgTx::release_lease(const std::string& payment_id, std::int64_t fence, UnixMillis next_attempt_at) {
  return pg::release_lease(conn_, payment_id, fence, next_attempt_at);
}
int PgTx::release_leases_of(const std::string& owner) {
  return pg::release_leases_of(conn_, owner);
}
CasResult PgTx::apply_transition(const std::string& payment_id, std::optional<std::int64_t> fence, const Transition& t, const TransitionUpdate& u, UnixMillis now, Random& rng) {
  Applied applied = pg::apply_transition(conn_, payment_id, fence, t, u, now, rng, observer_);
  if (applied.announcement) after_commit(std::move(applied.announcement));
  return applied.result;
}
CallbackOutcome PgTx::record_callback(const VendorCallback& cb, UnixMillis now, Random& rng) {
  return pg::record_callback(WriteTx{conn_, *this, observer_}, cb, now, rng);
}
Held PgTx::hold_with_evidence(const Payment& p, const Transition& escalation, boost::json::object evidence, UnixMillis now, Random& rng) {
  return pg::hold_with_evidence(WriteTx{conn_, *this, observer_}, p, escalation, std::move(evidence), now, rng);
}
bool PgTx::append_open_case_evidence(const std::string& payment_id, boost::json::object entry, UnixMillis now) {
  return pg::append_open_case_evidence(conn_, payment_id, std::move(entry), now);
}
std::optional<ReconciliationCase> PgTx::find_case(const std::string& case_id) {
  return pg::find_case(conn_, case_id);
}
CasePage PgTx::list_cases(std::optional<CaseStatus> status, int limit, const std::optional<std::string>& cursor) {
  return pg::list_cases(conn_, status, limit, cursor);
}
ResolveResult PgTx::resolve_case(const std::string& case_id, const Resolution& resolution, const Contract& contract, UnixMillis now, Random& rng) {
  return pg::resolve_case(WriteTx{conn_, *this, observer_}, case_id, resolution, contract, now, rng);
}
ImportSummary PgTx::import_settlement(const std::string& provider, const SettlementFile& file,
                                      const std::string& by, UnixMillis now, Random& rng) {
  return pg::import_settlement(WriteTx{conn_, *this, observer_}, provider, file, by, now, rng);
}
std::vector<OutboxEvent> PgTx::due_deliveries(const std::vector<std::string>& tenants, UnixMillis now, int limit, Millis claim, const std::vector<std::string>& exclude) {
  return pg::due_deliveries(conn_, tenants, now, limit, claim, exclude);
}
bool PgTx::mark_delivered(const std::string& event_id, UnixMillis now) {
  return pg::mark_delivered(conn_, event_id, now);
}
bool PgTx::mark_delivery_failed(const std::string& event_id, const std::string& error, UnixMillis next_attempt_at) {
  return pg::mark_delivery_failed(conn_, event_id, error, next_attempt_at);
}
OutboxBacklog PgTx::outbox_backlog(const std::vector<std::string>& tenants) {
  return pg::outbox_backlog(conn_, tenants);
}
EventPage PgTx::list_events(const std::string& tenant_id, std::int64_t after, int limit) {
  return pg::list_events(conn_, tenant_id, after, limit);
}
std::optional<OutboxEvent> PgTx::find_event(const std::string& event_id) {
  return pg::find_event(conn_, event_id);
}
int PgTx::purge_callback_inbox(UnixMillis before, int limit) {
  return pg::purge_callback_inbox(conn_, before, limit);
}
int PgTx::purge_delivered_events(UnixMillis before, int limit) {
  return pg::purge_delivered_events(conn_, before, limit);
}
StatusCounts PgTx::status_counts() { return pg::status_counts(conn_); }
std::vector<ExposureRow> PgTx::exposure() { return pg::exposure(conn_); }
ExposureFigures PgTx::exposure_of(const std::string& provider, const std::string& currency) {
  return pg::exposure_of(conn_, provider, currency);
}
std::vector<std::string> PgTx::exposure_differences() { return pg::exposure_differences(conn_); }

PgStore::PgStore(PgStoreOptions opts)
    : opts_(std::move(opts)),
      clock_(opts_.clock ? opts_.clock : &system_clock),
      pool_(std::make_unique<Pool>(opts_.url, std::max<std::size_t>(1, opts_.pool_size), *clock_,
                                   opts_.reconnect, opts_.metrics)),
      health_(*clock_, pg_storage_error_kinds()) {
  const std::size_t threads =
      std::max<std::size_t>(1, std::min(opts_.threads, std::max<std::size_t>(1, opts_.pool_size)));
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run_threads(); });
}

PgStore::~PgStore() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void PgStore::submit_judged(JudgedWork work, Done done) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      done(WriteStatus::stopped, "the store is shutting down");
      return;
    }
    queue_.push_back(Job{std::move(work), std::move(done)});
  }
  cv_.notify_one();
}

void PgStore::run_threads() {
  const std::size_t max_batch = std::clamp<std::size_t>(opts_.max_batch, 1, max_jobs_per_batch);
  for (;;) {
    // Group commit: whatever queued while the other write connections were busy goes into one
    // transaction, so a busy node commits more jobs per WAL flush, and a quiet one commits each
    // job on its own as soon as it arrives.
    std::vector<Job> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      while (!queue_.empty() && batch.size() < max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    run_batch(batch);
  }
}

void PgStore::record_commit() {
  std::uint64_t seq;
  {
    std::lock_guard lock(mu_);
    seq = ++commits_;
  }
  health_.committed(seq);
}

namespace {

// What became of one job of a batch, before the batch's COMMIT.
struct JobRun {
  WriteStatus status = WriteStatus::committed;
  std::string error;
  std::string_view error_kind;                // a failure of the job alone (pg_storage_error_kinds)
  std::vector<std::function<void()>> actions;  // its after-commit actions, if its work stays
  bool lost_conflict = false;                  // run it again in a later transaction
  bool not_run = false;                        // after a lost conflict: for a later transaction
};

// Runs the jobs of a batch in one READ COMMITTED transaction on `conn`, each after a savepoint
// of its own, and commits. A job that refuses (throws, or takes its work back)
// is rolled back to its savepoint alone and the others go on. A job that loses a serialization
// conflict or a deadlock is rolled back to its savepoint too, and the batch stops there: the
// jobs before it commit, and it and every job after it run again in a later transaction, never
// in this one (the locks its cycle waits on may be this transaction's own, held by earlier jobs,
// and this transaction's id, which orders the feed, does not change). Going on would keep those
// locks while each later job that needs the same rows waits out the server's deadlock_timeout
// and loses in turn: a batch of 64 held its rows, and every transaction waiting on them, for a
// minute. A pg::Error that is the
// connection's or the COMMIT's is thrown: the transaction as a whole failed.
void run_jobs(Connection& conn, std::vector<Store::JudgedWork*> work, std::vector<JobRun>& runs,
              const Db::TransitionObserver* transitions) {
  conn.exec("BEGIN ISOLATION LEVEL READ COMMITTED");
  for (std::size_t i = 0; i < work.size(); ++i) {
    JobRun& run = runs[i];
    run = JobRun{};
    // The job's savepoint goes to the server with the job's first statement, in one round trip.
    // Each job's savepoint has a name of its own and stays (nested in the ones before) until the
    // COMMIT, so that rolling back to it can only ever undo this job: had it not been set, the
    // rollback fails and with it the whole batch, never an earlier job's work.
    const std::string savepoint = "job_" + std::to_string(i);
    conn.defer("SAVEPOINT " + savepoint);
    const auto roll_back = [&](WriteStatus status, std::string error) {
      conn.exec("ROLLBACK TO SAVEPOINT " + savepoint);
      run.actions.clear();
      run.status = status;
      run.error = std::move(error);
    };
    try {
      PgTx tx(conn, &run.actions, transitions);
      if ((*work[i])(tx) == Store::Verdict::take_back) roll_back(WriteStatus::declined, "");
      // What the job deferred is sent before the next job's savepoint: its failure is this job's.
      else conn.flush();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::connection_lost || e.kind() == ErrorKind::commit_unknown) throw;
      if (e.retryable()) {
        roll_back(WriteStatus::busy, e.what());
        run.lost_conflict = true;
        for (std::size_t later = i + 1; later < work.size(); ++later) {
          runs[later] = JobRun{};
          runs[later].not_run = true;
        }
        break;
      } else if (refusal(e.sqlstate())) {
        roll_back(WriteStatus::rejected, e.what());
      } else {
        roll_back(WriteStatus::failed, e.what());
        run.error_kind = "other";
      }
    } catch (const std::exception& e) {
      roll_back(WriteStatus::rejected, e.what());
    }
  }
  // Crash timeline: dying before this COMMIT returns loses the whole batch and no job has been
  // answered; dying after it, every kept job is durable and unanswered clients retry into a
  // replay.
  conn.commit();
}

}  // namespace

void PgStore::run_batch(std::vector<Job>& batch) {
  std::vector<JudgedWork*> work;
  work.reserve(batch.size());
  for (auto& job : batch) work.push_back(&job.work);
  std::vector<JobRun> runs(batch.size());
  const auto fail_all = [&](WriteStatus status, const std::string& error) {
    for (auto& job : batch) job.done(status, error);
  };
  // A batch runs on a pooled connection; if that one turns out to have broken while idle (the
  // server restarted), nothing of the batch was written, and it runs once more on a new one.
  for (bool fresh : {false, true}) {
    std::optional<Pool::Lease> conn;
    try {
      conn.emplace(pool_->acquire(fresh));
    } catch (const Error& e) {
      health_.failed("connection_lost", e.what());
      return fail_all(WriteStatus::failed, e.what());
    }
    const MonotonicTime began = clock_->monotonic();
    try {
      run_jobs(**conn, work, runs, &opts_.transitions);
    } catch (const Error& e) {
      if ((**conn).ok() && (**conn).in_transaction()) {
        try {
          (**conn).exec("ROLLBACK");
        } catch (const Error&) {
        }
      }
      const bool stale = e.kind() == ErrorKind::connection_lost && conn->reused();
      if (e.kind() == ErrorKind::connection_lost || e.kind() == ErrorKind::commit_unknown)
        (**conn).close();
      conn.reset();
      if (stale && !fresh) {
        pool_->discard_idle();
        continue;
      }
      switch (e.kind()) {
        case ErrorKind::commit_unknown: {
          const std::string error = std::string("the outcome of COMMIT is unknown: ") + e.what();
          health_.failed("commit_unknown", error);
          return fail_all(WriteStatus::failed, error);
        }
        case ErrorKind::connection_lost:
          health_.failed("connection_lost", e.what());
          return fail_all(WriteStatus::failed, e.what());
        case ErrorKind::serialization_failure:
        case ErrorKind::deadlock:
          health_.failed("busy", e.what());
          return fail_all(WriteStatus::busy, e.what());
        default:
          health_.failed("other", e.what());
          return fail_all(WriteStatus::failed, e.what());
      }
    } catch (const std::exception& e) {
      // Not the database's (a result read as a type it does not hold): nothing of the batch
      // may stay, since no job can say what of it was done.
      if ((**conn).ok() && (**conn).in_transaction()) {
        try {
          (**conn).exec("ROLLBACK");
        } catch (const Error&) {
          (**conn).close();
        }
      }
      health_.failed("other", e.what());
      return fail_all(WriteStatus::failed, e.what());
    }
    std::size_t kept = 0;
    for (const auto& run : runs) kept += run.status == WriteStatus::committed && !run.not_run;
    opts_.metrics.committed(std::chrono::duration<double>(clock_->monotonic() - began).count(), kept);
    break;
  }
  // COMMIT has returned: the kept jobs are durable.
  record_commit();  // a COMMIT the server answered: it takes writes
  // Before the answers: whoever reads /metrics after an answer sees its effects counted.
  for (auto& run : runs)
    for (auto& action : run.actions) action();
  std::vector<Job> again;
  const int max_runs = std::max(1, opts_.retry.max_attempts);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    JobRun& run = runs[i];
    if (run.not_run) {  // it lost nothing: its runs are not counted
      again.push_back(std::move(batch[i]));
      continue;
    }
    if (run.lost_conflict && batch[i].runs + 1 < max_runs) {
      ++batch[i].runs;
      again.push_back(std::move(batch[i]));
      continue;
    }
    if (run.lost_conflict) health_.failed("busy", run.error);
    if (!run.error_kind.empty()) health_.failed(run.error_kind, run.error);
    batch[i].done(run.status, run.error);
  }
  if (again.empty()) return;
  {
    // At the front, in their order: they were queued before everything behind them.
    std::lock_guard lock(mu_);
    for (auto it = again.rbegin(); it != again.rend(); ++it) queue_.push_front(std::move(*it));
  }
  cv_.notify_one();
}

void PgStore::read(const std::function<void(Tx&)>& f) {
  for (bool fresh : {false, true}) {
    Pool::Lease lease = pool_->acquire(fresh);
    Connection& conn = *lease;
    try {
      conn.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    } catch (const Error& e) {
      // A pooled connection that broke while idle: the read runs on a new one.
      if (!fresh && lease.reused() && e.kind() == ErrorKind::connection_lost) {
        pool_->discard_idle();
        continue;
      }
      throw;
    }
    try {
      PgTx tx(conn, nullptr);
      f(tx);
      conn.commit();
      return;
    } catch (...) {
      if (conn.ok() && conn.in_transaction()) {
        try {
          conn.exec("ROLLBACK");
        } catch (const Error&) {
        }
      }
      throw;
    }
  }
}

void PgStore::probe_write(Done done) {
  submit([](Tx& tx) { static_cast<PgTx&>(tx).conn().exec("SELECT txid_current()"); },
         std::move(done));
}

void PgStore::probe_read() {
  read([](Tx& tx) { static_cast<PgTx&>(tx).conn().exec("SELECT 1"); });
}

StorageHealth PgStore::health() const { return health_.health(); }

std::map<std::string, std::uint64_t> PgStore::storage_errors() const { return health_.errors(); }

std::size_t PgStore::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace payorch::store::pg
