#include "store/postgres/history.h"

namespace payorch::store::pg {

void insert_history(Connection& conn, const HistoryEntry& e) {
  // Nothing of its result is read: it goes to the server with the transaction's next statement.
  conn.defer(
      "INSERT INTO payment_history (payment_id, at, from_state, to_state, next_action, fence,"
      " cause, event_type, event_id, case_reason, request_id)"
      " VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)",
      {e.payment_id, e.at, e.from_state, e.to_state, e.next_action, e.fence, e.cause, e.event_type,
       e.event_id, e.case_reason, e.request_id});
}

std::vector<HistoryEntry> payment_history(Connection& conn, const std::string& payment_id) {
  const Result r = conn.exec("SELECT " + std::string(history_columns) +
                                 " FROM payment_history WHERE payment_id = $1 ORDER BY seq",
                             {payment_id});
  std::vector<HistoryEntry> out;
  for (int row = 0; row < r.rows(); ++row) {
    HistoryEntry e;
    int i = 0;
    e.seq = r.integer(row, i++);
    e.payment_id = r.text(row, i++);
    e.at = r.integer(row, i++);
    e.from_state = r.opt_text(row, i++);
    e.to_state = r.text(row, i++);
    e.next_action = r.text(row, i++);
    e.fence = r.integer(row, i++);
    e.cause = r.text(row, i++);
    e.event_type = r.opt_text(row, i++);
    e.event_id = r.opt_text(row, i++);
    e.case_reason = r.opt_text(row, i++);
    e.request_id = r.opt_text(row, i++);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<HistoryEvent> outbox_history(Connection& conn, const std::string& payment_id) {
  const Result r = conn.exec(
      "SELECT created_at, type, event_id, request_id FROM outbox WHERE payment_id = $1 ORDER BY seq",
      {payment_id});
  std::vector<HistoryEvent> out;
  for (int row = 0; row < r.rows(); ++row)
    out.push_back(HistoryEvent{r.integer(row, 0), r.text(row, 1), r.text(row, 2), r.opt_text(row, 3)});
  return out;
}

}  // namespace payorch::store::pg
