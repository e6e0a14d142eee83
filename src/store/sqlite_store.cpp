#include "store/sqlite_store.h"

#include "store/commit_sequence.h"

namespace payorch::store {

void SqliteTx::after_commit(std::function<void()> action) {
  db_.after_commit(std::move(action));
}

RefundIntakeOutcome SqliteTx::record_refund_intake(const RefundIntakeRequest& req, UnixMillis now, Random& rng) {
  return store::record_refund_intake(db_, req, now, rng);
}

std::optional<Payment> SqliteTx::find_refund(const std::string& tenant_id, const std::string& operation_id) {
  return store::find_refund(db_, tenant_id, operation_id);
}

std::vector<Payment> SqliteTx::list_refunds(const std::string& payment_id) {
  return store::list_refunds(db_, payment_id);
}

std::vector<std::pair<RefundState, std::int64_t>> SqliteTx::count_refunds() {
  return store::count_refunds(db_);
}

IntakeOutcome SqliteTx::record_intake(const IntakeRequest& req, UnixMillis now, Random& rng) {
  return store::record_intake(db_, req, now, rng);
}

std::optional<Payment> SqliteTx::find_payment_by_client_key(const std::string& provider, const std::string& client_key) {
  return store::find_payment_by_client_key(db_, provider, client_key);
}

std::vector<HistoryEntry> SqliteTx::payment_history(const std::string& payment_id) {
  return store::payment_history(db_, payment_id);
}

std::vector<HistoryEvent> SqliteTx::outbox_history(const std::string& payment_id) {
  return store::outbox_history(db_, payment_id);
}

std::vector<ReconciliationCase> SqliteTx::cases_of_row(const std::string& row_id) {
  return store::cases_of_row(db_, row_id);
}

std::optional<Payment> SqliteTx::find_payment_by_id(const std::string& id) {
  return store::find_payment_by_id(db_, id);
}

std::optional<Payment> SqliteTx::find_payment_by_operation(const std::string& tenant_id, const std::string& operation_type, const std::string& operation_id) {
  return store::find_payment_by_operation(db_, tenant_id, operation_type, operation_id);
}

PaymentPage SqliteTx::list_payments(const std::string& tenant_id, std::optional<PaymentState> state, int limit, const std::optional<std::string>& cursor) {
  return store::list_payments(db_, tenant_id, state, limit, cursor);
}

std::vector<Lease> SqliteTx::claim_due(const std::string& owner, UnixMillis now, Millis lease, const std::vector<ClaimQuota>& quotas, int max) {
  return store::claim_due(db_, owner, now, lease, quotas, max);
}

bool SqliteTx::record_call_started(const std::string& payment_id, std::int64_t fence, bool submit, UnixMillis now, Payment* claimed) {
  return store::record_call_started(db_, payment_id, fence, submit, now, claimed);
}

std::vector<StartedCall> SqliteTx::start_calls(const std::vector<CallStart>& calls, UnixMillis now, UnixMillis held_until) {
  return store::start_calls(db_, calls, now, held_until);
}

bool SqliteTx::undo_call_started(const std::string& payment_id, std::int64_t fence, const CallMarks& before, UnixMillis next_attempt_at) {
  return store::undo_call_started(db_, payment_id, fence, before, next_attempt_at);
}

bool SqliteTx::release_lease(const std::string& payment_id, std::int64_t fence, UnixMillis next_attempt_at) {
  return store::release_lease(db_, payment_id, fence, next_attempt_at);
}

int SqliteTx::release_leases_of(const std::string& owner) {
  return store::release_leases_of(db_, owner);
}

CasResult SqliteTx::apply_transition(const std::string& payment_id, std::optional<std::int64_t> fence, const Transition& t, const TransitionUpdate& u, UnixMillis now, Random& rng) {
  return store::apply_transition(db_, payment_id, fence, t, u, now, rng);
}

CallbackOutcome SqliteTx::record_callback(const VendorCallback& cb, UnixMillis now, Random& rng) {
  return store::record_callback(db_, cb, now, rng);
}

Held SqliteTx::hold_with_evidence(const Payment& p, const Transition& escalation, boost::json::object evidence, UnixMillis now, Random& rng) {
  return store::hold_with_evidence(db_, p, escalation, std::move(evidence), now, rng);
}

bool SqliteTx::append_open_case_evidence(const std::string& payment_id, boost::json::object entry, UnixMillis now) {
  return store::append_open_case_evidence(db_, payment_id, std::move(entry), now);
}

std::optional<ReconciliationCase> SqliteTx::find_case(const std::string& case_id) {
  return store::find_case(db_, case_id);
}

CasePage SqliteTx::list_cases(std::optional<CaseStatus> status, int limit, const std::optional<std::string>& cursor) {
  return store::list_cases(db_, status, limit, cursor);
}

ResolveResult SqliteTx::resolve_case(const std::string& case_id, const Resolution& resolution, const Contract& contract, UnixMillis now, Random& rng) {
  return store::resolve_case(db_, case_id, resolution, contract, now, rng);
}

ImportSummary SqliteTx::import_settlement(const std::string& provider, const SettlementFile& file,
                                          const std::string& by, UnixMillis now, Random& rng) {
  return store::import_settlement(db_, provider, file, by, now, rng);
}

std::vector<OutboxEvent> SqliteTx::due_deliveries(const std::vector<std::string>& tenants, UnixMillis now, int limit, Millis /*claim*/, const std::vector<std::string>& exclude) {
  return store::due_deliveries(db_, tenants, now, limit, exclude);
}

bool SqliteTx::mark_delivered(const std::string& event_id, UnixMillis now) {
  return store::mark_delivered(db_, event_id, now);
}

bool SqliteTx::mark_delivery_failed(const std::string& event_id, const std::string& error, UnixMillis next_attempt_at) {
  return store::mark_delivery_failed(db_, event_id, error, next_attempt_at);
}

OutboxBacklog SqliteTx::outbox_backlog(const std::vector<std::string>& tenants) {
  return store::outbox_backlog(db_, tenants);
}

EventPage SqliteTx::list_events(const std::string& tenant_id, std::int64_t after, int limit) {
  return store::list_events(db_, tenant_id, after, limit);
}

std::optional<OutboxEvent> SqliteTx::find_event(const std::string& event_id) {
  return store::find_event(db_, event_id);
}

int SqliteTx::purge_callback_inbox(UnixMillis before, int limit) {
  return store::purge_callback_inbox(db_, before, limit);
}

int SqliteTx::purge_delivered_events(UnixMillis before, int limit) {
  return store::purge_delivered_events(db_, before, limit);
}

StatusCounts SqliteTx::status_counts() {
  return store::status_counts(db_);
}

std::vector<ExposureRow> SqliteTx::exposure() {
  return store::exposure(db_);
}

ExposureFigures SqliteTx::exposure_of(const std::string& provider, const std::string& currency) {
  return store::exposure_of(db_, provider, currency);
}

std::vector<std::string> SqliteTx::exposure_differences() {
  return store::exposure_differences(db_);
}

void SqliteStore::submit_judged(JudgedWork work, Done done) {
  writer_.submit_judged(
      [work = std::move(work)](Db& db) {
        SqliteTx tx(db);
        return work(tx);
      },
      std::move(done));
}

void SqliteStore::read(const std::function<void(Tx&)>& f) {
  reads_.with([&](Db& db) {
    SqliteTx tx(db);
    f(tx);
  });
}

void SqliteStore::probe_write(Done done) {
  writer_.submit([](Db& db) { touch_commit_sequence(db); }, std::move(done));
}

void SqliteStore::probe_read() {
  reads_.with([](Db& db) { return read_commit_sequence(db); });
}

}  // namespace payorch::store
