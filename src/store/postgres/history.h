#pragma once
// The payment history on PostgreSQL: store/history.h's insert and reads, on a pg::Connection in
// the caller's transaction. What a row says is store/history.h's; they throw pg::Error.
#include <string>
#include <vector>

#include "store/history.h"
#include "store/postgres/connection.h"

namespace payorch::store::pg {

// One INSERT, prepared once per connection, deferred (Connection::defer): it reaches the server
// with the transaction's next statement, and a failure of it fails that statement.
void insert_history(Connection& conn, const HistoryEntry& e);
std::vector<HistoryEntry> payment_history(Connection& conn, const std::string& payment_id);
std::vector<HistoryEvent> outbox_history(Connection& conn, const std::string& payment_id);

}  // namespace payorch::store::pg
