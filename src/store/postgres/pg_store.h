#pragma once
// The store on PostgreSQL (docs/postgres.md): a Tx over one pooled connection, and the Store
// that runs write jobs on a few write connections with group commit — the jobs queued together
// share one transaction, each in a savepoint of its own — and answers each job only once its
// transaction's COMMIT has returned.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/connection.h"
#include "store/postgres/transaction.h"
#include "store/storage_health.h"
#include "store/store_metrics.h"
#include "store/store.h"

namespace payorch::store::pg {

// The store's operations on `conn`, inside the transaction the caller opened. `after_commit`
// collects the actions of a write transaction; nullptr in a read (registering one is a
// std::logic_error there: a read commits nothing).
class PgTx final : public Tx {
public:
  // `transitions` (may be null) is told of every state change once it has committed.
  PgTx(Connection& conn, std::vector<std::function<void()>>* after_commit,
       const Db::TransitionObserver* transitions = nullptr)
      : conn_(conn), after_commit_(after_commit), observer_(transitions) {}
  Connection& conn() { return conn_; }

  void after_commit(std::function<void()> action) override;
  IntakeOutcome record_intake(const IntakeRequest& req, UnixMillis now, Random& rng) override;
  std::optional<Payment> find_payment_by_id(const std::string& id) override;
  std::optional<Payment> find_payment_by_operation(const std::string& tenant_id, const std::string& operation_type, const std::string& operation_id) override;
  PaymentPage list_payments(const std::string& tenant_id, std::optional<PaymentState> state, int limit, const std::optional<std::string>& cursor) override;
  std::optional<Payment> find_payment_by_client_key(const std::string& provider, const std::string& client_key) override;
  std::vector<HistoryEntry> payment_history(const std::string& payment_id) override;
  std::vector<HistoryEvent> outbox_history(const std::string& payment_id) override;
  std::vector<ReconciliationCase> cases_of_row(const std::string& row_id) override;
  RefundIntakeOutcome record_refund_intake(const RefundIntakeRequest& req, UnixMillis now, Random& rng) override;
  std::optional<Payment> find_refund(const std::string& tenant_id, const std::string& operation_id) override;
  std::vector<Payment> list_refunds(const std::string& payment_id) override;
  std::vector<std::pair<RefundState, std::int64_t>> count_refunds() override;
  std::vector<Lease> claim_due(const std::string& owner, UnixMillis now, Millis lease, const std::vector<ClaimQuota>& quotas, int max) override;
  bool record_call_started(const std::string& payment_id, std::int64_t fence, bool submit, UnixMillis now, Payment* claimed) override;
  std::vector<StartedCall> start_calls(const std::vector<CallStart>& calls, UnixMillis now, UnixMillis held_until) override;
  bool undo_call_started(const std::string& payment_id, std::int64_t fence, const CallMarks& before, UnixMillis next_attempt_at) override;
  bool release_lease(const std::string& payment_id, std::int64_t fence, UnixMillis next_attempt_at) override;
  int release_leases_of(const std::string& owner) override;
  CasResult apply_transition(const std::string& payment_id, std::optional<std::int64_t> fence, const Transition& t, const TransitionUpdate& u, UnixMillis now, Random& rng) override;
  CallbackOutcome record_callback(const VendorCallback& cb, UnixMillis now, Random& rng) override;
  Held hold_with_evidence(const Payment& p, const Transition& escalation, boost::json::object evidence, UnixMillis now, Random& rng) override;
  bool append_open_case_evidence(const std::string& payment_id, boost::json::object entry, UnixMillis now) override;
  std::optional<ReconciliationCase> find_case(const std::string& case_id) override;
  CasePage list_cases(std::optional<CaseStatus> status, int limit, const std::optional<std::string>& cursor) override;
  ResolveResult resolve_case(const std::string& case_id, const Resolution& resolution, const Contract& contract, UnixMillis now, Random& rng) override;
  ImportSummary import_settlement(const std::string& provider, const SettlementFile& file,
                                  const std::string& by, UnixMillis now, Random& rng) override;
  std::vector<OutboxEvent> due_deliveries(const std::vector<std::string>& tenants, UnixMillis now, int limit, Millis claim, const std::vector<std::string>& exclude) override;
  bool mark_delivered(const std::string& event_id, UnixMillis now) override;
  bool mark_delivery_failed(const std::string& event_id, const std::string& error, UnixMillis next_attempt_at) override;
  OutboxBacklog outbox_backlog(const std::vector<std::string>& tenants) override;
  EventPage list_events(const std::string& tenant_id, std::int64_t after, int limit) override;
  std::optional<OutboxEvent> find_event(const std::string& event_id) override;
  int purge_callback_inbox(UnixMillis before, int limit) override;
  int purge_delivered_events(UnixMillis before, int limit) override;
  StatusCounts status_counts() override;
  std::vector<ExposureRow> exposure() override;
  ExposureFigures exposure_of(const std::string& provider, const std::string& currency) override;
  std::vector<std::string> exposure_differences() override;

private:
  Connection& conn_;
  std::vector<std::function<void()>>* after_commit_;
  const Db::TransitionObserver* observer_;
};

// How often a store whose database cannot be reached tries a new connection: after a failed
// attempt it waits `initial`, doubling with each further failure up to `max`; a connection that
// opens ends the backoff. Jobs and reads in between fail at once (connection_lost).
struct ReconnectBackoff {
  Millis initial{100};
  Millis max{5000};
};

// Jobs sharing one transaction at most. Each job runs in a savepoint, a subtransaction with an
// id of its own once it writes; PostgreSQL keeps 64 of those per session in shared memory
// (PGPROC_MAX_CACHED_SUBXIDS), and past that every other session's snapshots must look
// subtransactions up on disk. Hence at most 64.
inline constexpr std::size_t max_jobs_per_batch = 64;

struct PgStoreOptions {
  std::string url;             // libpq URI of a migrated database (store/postgres/migrations.h)
  std::size_t pool_size = 8;   // connections, shared by the job threads and read()
  std::size_t threads = 2;     // job threads (at most pool_size): write transactions at a time
  std::size_t max_batch = max_jobs_per_batch;  // jobs sharing one transaction at most (1..64)
  RetryPolicy retry = {};      // runs of a job that loses a conflict
  ReconnectBackoff reconnect = {};
  const Clock* clock = nullptr;  // times in health(); null: the system clock
  // Told about every payment state change the store's transactions commit (as WriterOptions).
  Db::TransitionObserver transitions = {};
  // Commit durations and the wait for a pooled connection (store/store_metrics.h).
  StoreMetrics metrics = {};
};

// Storage error kinds on PostgreSQL, as storage_errors() counts them: "busy" (a conflict through
// every retry), "connection_lost", "commit_unknown", "other".
const std::vector<std::string_view>& pg_storage_error_kinds();

class PgStore final : public Store {
public:
  // Starts the job threads; connections are opened when first needed (and again after one
  // breaks), so a database that is down fails jobs rather than the constructor.
  explicit PgStore(PgStoreOptions opts);
  // Runs the jobs already queued, then stops the threads.
  ~PgStore() override;
  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  // Each job runs in its own READ COMMITTED transaction: its operations decide by constraints
  // and row locks (ON CONFLICT, FOR UPDATE, fenced UPDATE ... WHERE fence = $n), which READ
  // COMMITTED re-checks against the latest committed row; a stricter level would turn every
  // such race into a serialization failure and a retry.
  void submit_judged(JudgedWork work, Done done) override;
  // On a pooled connection, in a READ ONLY REPEATABLE READ transaction: the queries of one
  // read see one snapshot.
  void read(const std::function<void(Tx&)>& f) override;
  // A transaction that takes a transaction id (txid_current()), which a server that does not
  // take writes (a standby, a read-only default) refuses.
  void probe_write(Done done) override;
  void probe_read() override;
  StorageHealth health() const override;
  std::map<std::string, std::uint64_t> storage_errors() const override;
  std::size_t queued() const override;
  bool shared() const override { return true; }

private:
  struct Job {
    JudgedWork work;
    Done done;
    int runs = 0;  // transactions it has run in and lost a conflict in
  };
  class Pool;
  void run_threads();
  // Runs `batch` in one transaction; jobs that lost a conflict go back to the queue's front.
  void run_batch(std::vector<Job>& batch);
  void record_commit();

  PgStoreOptions opts_;
  const Clock* clock_;
  std::unique_ptr<Pool> pool_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;

  HealthRecord health_;
  std::uint64_t commits_ = 0;  // this store's commits (StorageHealth::commit_seq); under mu_
};

}  // namespace payorch::store::pg
