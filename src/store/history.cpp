#include "store/history.h"

#include <stdexcept>

#include "core/view.h"

namespace payorch::store {

std::string_view history_state(const Payment& row) {
  if (row.refund_of && row.deferred) return to_string(RefundState::deferred);
  return to_string(row.state);
}

std::string history_cause(const Transition& t) {
  if (t.trigger) return std::string(to_string(*t.trigger));
  if (t.open_case) return std::string(to_string(*t.open_case));
  throw std::logic_error("a state machine step without a trigger or a case has no cause to record");
}

HistoryEntry created_entry(const Payment& row, const std::string& event_id, UnixMillis now) {
  HistoryEntry e;
  e.payment_id = row.id;
  e.at = now;
  e.to_state = history_state(row);
  e.next_action = to_string(row.next_action);
  e.fence = row.fence;
  e.cause = intake_cause;
  e.event_type = std::string(event_type(EventType::created, row));
  e.event_id = event_id;
  e.request_id = row.origin.request_id;
  return e;
}

HistoryEntry transition_entry(const std::string& payment_id, const Transition& t,
                              std::int64_t fence_after, std::optional<std::string_view> type,
                              std::optional<std::string> event_id, bool case_opened,
                              const std::optional<std::string>& request_id, UnixMillis now) {
  HistoryEntry e;
  e.payment_id = payment_id;
  e.at = now;
  // apply_transition never matches a DEFERRED row: a refund's states here are the payment's.
  e.from_state = std::string(to_string(t.from));
  e.to_state = to_string(t.to);
  e.next_action = to_string(t.next);
  e.fence = fence_after;
  e.cause = history_cause(t);
  if (type) e.event_type = std::string(*type);
  e.event_id = std::move(event_id);
  if (case_opened && t.open_case) e.case_reason = std::string(to_string(*t.open_case));
  e.request_id = request_id;
  return e;
}

HistoryEntry released_entry(const Payment& refund, PaymentState payment_now,
                            const DeferredRefundStep& step, const std::string& event_id,
                            UnixMillis now) {
  HistoryEntry e;
  e.payment_id = refund.id;
  e.at = now;
  e.from_state = std::string(to_string(step.transition.from));
  e.to_state = to_string(step.transition.to);
  e.next_action = to_string(step.transition.next);
  e.fence = refund.fence;
  // Named after what happened to the payment: the refund's own machine has no trigger for it.
  e.cause = payment_now == PaymentState::succeeded ? "payment_succeeded" : "payment_failed";
  if (step.transition.event) e.event_type = std::string(event_type(*step.transition.event, refund));
  e.event_id = event_id;
  return e;
}

HistoryEntry escalation_entry(const Payment& row, CaseReason reason, const std::string& event_id,
                              UnixMillis now) {
  HistoryEntry e;
  e.payment_id = row.id;
  e.at = now;
  e.from_state = std::string(history_state(row));
  e.to_state = history_state(row);
  e.next_action = to_string(row.next_action);
  e.fence = row.fence;
  e.cause = to_string(reason);
  e.event_type = std::string(event_type(EventType::escalated, row));
  e.event_id = event_id;
  e.case_reason = std::string(to_string(reason));
  return e;
}

void insert_history(Db& db, const HistoryEntry& e) {
  db.prepare(
        "INSERT INTO payment_history (payment_id, at, from_state, to_state, next_action, fence,"
        " cause, event_type, event_id, case_reason, request_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)")
      .bind(1, e.payment_id)
      .bind(2, e.at)
      .bind(3, e.from_state)
      .bind(4, e.to_state)
      .bind(5, e.next_action)
      .bind(6, e.fence)
      .bind(7, e.cause)
      .bind(8, e.event_type)
      .bind(9, e.event_id)
      .bind(10, e.case_reason)
      .bind(11, e.request_id)
      .run();
}

std::vector<HistoryEntry> payment_history(Db& db, const std::string& payment_id) {
  auto st = db.prepare("SELECT " + std::string(history_columns) +
                       " FROM payment_history WHERE payment_id = ? ORDER BY seq");
  st.bind(1, payment_id);
  std::vector<HistoryEntry> out;
  while (st.step()) {
    HistoryEntry e;
    int i = 0;
    e.seq = st.col_int(i++);
    e.payment_id = st.col_text(i++);
    e.at = st.col_int(i++);
    e.from_state = st.col_opt_text(i++);
    e.to_state = st.col_text(i++);
    e.next_action = st.col_text(i++);
    e.fence = st.col_int(i++);
    e.cause = st.col_text(i++);
    e.event_type = st.col_opt_text(i++);
    e.event_id = st.col_opt_text(i++);
    e.case_reason = st.col_opt_text(i++);
    e.request_id = st.col_opt_text(i++);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<HistoryEvent> outbox_history(Db& db, const std::string& payment_id) {
  auto st = db.prepare(
      "SELECT created_at, type, event_id, request_id FROM outbox WHERE payment_id = ? ORDER BY seq");
  st.bind(1, payment_id);
  std::vector<HistoryEvent> out;
  while (st.step())
    out.push_back(HistoryEvent{st.col_int(0), st.col_text(1), st.col_text(2), st.col_opt_text(3)});
  return out;
}

}  // namespace payorch::store
