#pragma once
// The store seam: what the engine, the HTTP layer, delivery and the daemon ask of the database,
// whichever database it is. A job is a function of one transaction (Tx); the Store runs it and
// answers with a WriteStatus only once its outcome is known (for a commit: durable).
//
// Each database keeps its own way of running jobs: SQLite's Store puts them through its single
// group-commit writer (store/writer.h), each job in a savepoint; another database may give each
// job a transaction of its own and run it again after a serialization failure. Either way a job
// may run more than once, so it derives everything it writes from the transaction and its
// inputs, and effects outside the database go through Tx::after_commit.
//
// Tx's operations are the store's functions (store/*.h), with the same contracts; the SQLite
// ones are documented there.
#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/decide.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/callbacks.h"
#include "store/cases.h"
#include "store/exposure.h"
#include "store/history.h"
#include "store/intake.h"
#include "store/leases.h"
#include "store/outbox.h"
#include "store/payments.h"
#include "store/refunds.h"
#include "store/resolution.h"
#include "store/settlement.h"
#include "store/status.h"
#include "store/transitions.h"
#include "store/writer.h"

namespace payorch::store {

class Tx {
public:
  virtual ~Tx() = default;

  // Runs `action` once this transaction has committed; never if it rolls back (or the job is
  // taken back). Actions must not throw.
  virtual void after_commit(std::function<void()> action) = 0;

  // Intake and payments (store/intake.h, store/payments.h).
  virtual IntakeOutcome record_intake(const IntakeRequest& req, UnixMillis now, Random& rng) = 0;
  virtual std::optional<Payment> find_payment_by_id(const std::string& id) = 0;
  virtual std::optional<Payment> find_payment_by_operation(const std::string& tenant_id,
                                                           const std::string& operation_type,
                                                           const std::string& operation_id) = 0;
  virtual PaymentPage list_payments(const std::string& tenant_id, std::optional<PaymentState> state,
                                    int limit, const std::optional<std::string>& cursor) = 0;

  // The row of `provider` with that client_key (store/payments.h), a payment or a refund.
  virtual std::optional<Payment> find_payment_by_client_key(const std::string& provider,
                                                            const std::string& client_key) = 0;

  // The payment history (store/history.h) of a payment or refund row, in recording order; the
  // row's outbox events still kept (what shows the life of a row older than the history); and
  // every reconciliation case of the row, oldest first (store/cases.h).
  virtual std::vector<HistoryEntry> payment_history(const std::string& payment_id) = 0;
  virtual std::vector<HistoryEvent> outbox_history(const std::string& payment_id) = 0;
  virtual std::vector<ReconciliationCase> cases_of_row(const std::string& row_id) = 0;

  // Refunds (store/refunds.h): rows of payments with operation_type "refund"; claims,
  // transitions, callbacks and cases take them as they take payments.
  virtual RefundIntakeOutcome record_refund_intake(const RefundIntakeRequest& req, UnixMillis now,
                                                   Random& rng) = 0;
  virtual std::optional<Payment> find_refund(const std::string& tenant_id,
                                             const std::string& operation_id) = 0;
  virtual std::vector<Payment> list_refunds(const std::string& payment_id) = 0;
  virtual std::vector<std::pair<RefundState, std::int64_t>> count_refunds() = 0;

  // Claims, leases and transitions (store/leases.h, store/transitions.h).
  virtual std::vector<Lease> claim_due(const std::string& owner, UnixMillis now, Millis lease,
                                       const std::vector<ClaimQuota>& quotas, int max) = 0;
  virtual bool record_call_started(const std::string& payment_id, std::int64_t fence, bool submit,
                                   UnixMillis now, Payment* claimed = nullptr) = 0;
  virtual std::vector<StartedCall> start_calls(const std::vector<CallStart>& calls, UnixMillis now,
                                              UnixMillis held_until) = 0;
  virtual bool undo_call_started(const std::string& payment_id, std::int64_t fence,
                                 const CallMarks& before, UnixMillis next_attempt_at) = 0;
  virtual bool release_lease(const std::string& payment_id, std::int64_t fence,
                             UnixMillis next_attempt_at) = 0;
  virtual int release_leases_of(const std::string& owner) = 0;
  virtual CasResult apply_transition(const std::string& payment_id, std::optional<std::int64_t> fence,
                                     const Transition& t, const TransitionUpdate& u, UnixMillis now,
                                     Random& rng) = 0;

  // Vendor callbacks (store/callbacks.h).
  virtual CallbackOutcome record_callback(const VendorCallback& cb, UnixMillis now, Random& rng) = 0;

  // Reconciliation (store/cases.h, store/resolution.h, store/settlement.h).
  virtual Held hold_with_evidence(const Payment& p, const Transition& escalation,
                                  boost::json::object evidence, UnixMillis now, Random& rng) = 0;
  virtual bool append_open_case_evidence(const std::string& payment_id, boost::json::object entry,
                                         UnixMillis now) = 0;
  virtual std::optional<ReconciliationCase> find_case(const std::string& case_id) = 0;
  virtual CasePage list_cases(std::optional<CaseStatus> status, int limit,
                              const std::optional<std::string>& cursor) = 0;
  virtual ResolveResult resolve_case(const std::string& case_id, const Resolution& resolution,
                                     const Contract& contract, UnixMillis now, Random& rng) = 0;
  // `by`: the operator importing the file, recorded as the author of the cases it resolves.
  virtual ImportSummary import_settlement(const std::string& provider, const SettlementFile& file,
                                          const std::string& by, UnixMillis now, Random& rng) = 0;

  // The outbox and retention (store/outbox.h).
  // `claim`: on a shared store, how long the events a write job takes are held back from other
  // nodes' selections (as long as their push can take, Deliverer::push_claim); unused where one
  // daemon pushes and in a read.
  virtual std::vector<OutboxEvent> due_deliveries(const std::vector<std::string>& tenants, UnixMillis now,
                                                  int limit, Millis claim,
                                                  const std::vector<std::string>& exclude = {}) = 0;
  virtual bool mark_delivered(const std::string& event_id, UnixMillis now) = 0;
  virtual bool mark_delivery_failed(const std::string& event_id, const std::string& error,
                                    UnixMillis next_attempt_at) = 0;
  virtual OutboxBacklog outbox_backlog(const std::vector<std::string>& tenants) = 0;
  virtual EventPage list_events(const std::string& tenant_id, std::int64_t after, int limit) = 0;
  virtual std::optional<OutboxEvent> find_event(const std::string& event_id) = 0;
  virtual int purge_callback_inbox(UnixMillis before, int limit) = 0;
  virtual int purge_delivered_events(UnixMillis before, int limit) = 0;

  // Figures (store/status.h, store/exposure.h).
  virtual StatusCounts status_counts() = 0;
  virtual std::vector<ExposureRow> exposure() = 0;
  virtual ExposureFigures exposure_of(const std::string& provider, const std::string& currency) = 0;
  virtual std::vector<std::string> exposure_differences() = 0;
};

class Store {
public:
  using Work = std::function<void(Tx&)>;
  using Verdict = Writer::Verdict;
  using JudgedWork = std::function<Verdict(Tx&)>;
  using Done = Writer::Done;

  virtual ~Store() = default;

  // A job that may take all it wrote back (Writer::submit_judged): answered `declined`. Each
  // database runs jobs its own way here.
  virtual void submit_judged(JudgedWork work, Done done) = 0;
  // Runs `work` in a transaction; `done` is told the outcome once it is known (Writer::Done):
  // a judged job that always keeps its work.
  void submit(Work work, Done done) {
    submit_judged(
        [work = std::move(work)](Tx& tx) {
          work(tx);
          return Verdict::keep;
        },
        std::move(done));
  }
  // Runs `f` on a read-only snapshot, on the caller's thread; throws on a storage failure.
  virtual void read(const std::function<void(Tx&)>& f) = 0;

  // `f(tx)`'s value, read as read() does.
  template <class F>
  auto read_value(F&& f) -> decltype(f(std::declval<Tx&>())) {
    std::optional<decltype(f(std::declval<Tx&>()))> out;
    read([&](Tx& tx) { out.emplace(f(tx)); });
    return std::move(*out);
  }

  // A write that proves the database takes writes now (readiness): `done` as for submit().
  virtual void probe_write(Done done) = 0;
  // A read that proves the read side answers now (readiness); throws on a storage failure.
  virtual void probe_read() = 0;
  // What the last transactions say about the database (/readyz, /status).
  virtual StorageHealth health() const = 0;
  // Failed transactions by kind (payorch_storage_errors_total).
  virtual std::map<std::string, std::uint64_t> storage_errors() const = 0;
  // Jobs waiting to run.
  virtual std::size_t queued() const = 0;
  // Whether other daemons may work on the same database (PostgreSQL; a SQLite file has one
  // daemon). Work taken from a shared database must be claimed by a write that commits before
  // the work starts (as claim_due does), not merely read.
  virtual bool shared() const { return false; }
};

}  // namespace payorch::store
