#pragma once
// The payment rows and the intake on PostgreSQL: the same contracts as store/payments.h and
// store/intake.h, on a pg::Connection inside the caller's transaction. They throw pg::Error.
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/intake.h"
#include "store/payments.h"
#include "store/postgres/connection.h"

namespace payorch::store::pg {

std::optional<Payment> find_payment_by_id(Connection& conn, const std::string& id);
// Row `row` of a select_payments() result.
Payment read_payment_row(const Result& r, int row);
// As store::find_payment_by_client_key, without a lock (lock_payment_by_client_key takes one).
std::optional<Payment> find_payment_by_client_key(Connection& conn, const std::string& provider,
                                                  const std::string& client_key);
std::optional<Payment> find_payment_by_operation(Connection& conn, const std::string& tenant_id,
                                                 const std::string& operation_type,
                                                 const std::string& operation_id);
PaymentPage list_payments(Connection& conn, const std::string& tenant_id,
                          std::optional<PaymentState> state, int limit,
                          const std::optional<std::string>& cursor);

// store::insert_created on PostgreSQL: the row, its created event and its history entry in one
// statement.
std::optional<std::string> insert_created(Connection& conn, const Payment& p, UnixMillis now,
                                          Random& rng);

// Writes one outbox event for `p` as it is now; returns the event id (as SQLite's). The INSERT
// is deferred (Connection::defer), like insert_history's.
std::string insert_outbox_event(Connection& conn, EventType type, const Payment& p,
                                UnixMillis now, Random& rng,
                                const std::optional<std::string>& request_id = std::nullopt);

// store::record_intake on PostgreSQL. The insert is INSERT ... ON CONFLICT DO NOTHING: under
// READ COMMITTED a concurrent insert of the same key makes it wait for that transaction, and
// once that one has committed, the next statement (a new snapshot) reads its row, so two
// concurrent requests with one key create one payment and the other is replayed (or a
// conflict). Crash timeline as on SQLite: nothing is durable before the caller's COMMIT. A
// replay takes a transaction id, so that its COMMIT, like a creation's, waits for a synchronous
// standby (synchronous_commit), and a replayed 200 is never more durable than a 201.
// Writes the audit row of a conflicting request.
void insert_idempotency_conflict(Connection& conn, const IdempotencyConflict& c);

IntakeOutcome record_intake(Connection& conn, const IntakeRequest& req, UnixMillis now, Random& rng);

}  // namespace payorch::store::pg
