#pragma once
// The store on SQLite: a Tx over one connection (in the writer's transaction, a read pool's, or
// a test's own), and the Store that runs jobs through the group-commit Writer and reads on the
// ReadPool. The embedded default: one payorchd per database file (store/database.h).
#include "store/read_pool.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/writer.h"

namespace payorch::store {

// The store's functions on `db`, in whatever transaction `db` has open.
class SqliteTx final : public Tx {
public:
  explicit SqliteTx(Db& db) : db_(db) {}
  Db& db() { return db_; }

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
  Db& db_;
};

// Jobs through `writer` (which must be started), reads on `reads`; both outlive the store.
class SqliteStore final : public Store {
public:
  SqliteStore(Writer& writer, ReadPool& reads) : writer_(writer), reads_(reads) {}

  void submit_judged(JudgedWork work, Done done) override;
  void read(const std::function<void(Tx&)>& f) override;
  // Rewrites the commit sequence's row (store/commit_sequence.h): a full disk or a read-only
  // file fails it.
  void probe_write(Done done) override;
  void probe_read() override;
  StorageHealth health() const override { return writer_.health(); }
  std::map<std::string, std::uint64_t> storage_errors() const override { return writer_.storage_errors(); }
  std::size_t queued() const override { return writer_.queued(); }

private:
  Writer& writer_;
  ReadPool& reads_;
};

}  // namespace payorch::store
