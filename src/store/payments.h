#pragma once
// The payment rows: reading, listing, inserting, counting, and the outbox event of a payment as
// it is now. Every function takes the connection it runs on; the caller owns the transaction.
// They throw SqliteError. Leases are store/leases.h, state changes store/transitions.h.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/sqlite.h"

namespace payorch::store {

std::optional<Payment> find_payment_by_id(Db& db, const std::string& id);
std::optional<Payment> find_payment_by_operation(Db& db, const std::string& tenant_id,
                                                 const std::string& operation_type,
                                                 const std::string& operation_id);

// The payment of `provider` with that client_key: what a vendor's report names.
std::optional<Payment> find_payment_by_client_key(Db& db, const std::string& provider,
                                                  const std::string& client_key);
// The same payment, to be decided about in the Writer's transaction (the shared flows'
// lock_payment_by_client_key, store/settlement_flow.h and store/callback_flow.h): that
// transaction already excludes every other writer until it ends, so the read is the lock.
std::optional<Payment> lock_payment_by_client_key(Db& db, const std::string& provider,
                                                  const std::string& client_key);

struct PaymentPage {
  std::vector<Payment> payments;
  std::optional<std::string> next_cursor;  // the last id of this page when more may follow
};

// A tenant's payments, newest first. `cursor` is the id of the last payment already seen.
PaymentPage list_payments(Db& db, const std::string& tenant_id, std::optional<PaymentState> state,
                          int limit, const std::optional<std::string>& cursor);

// Inserts the payment row. Throws SqliteError (unique_violation()) on a business-key or
// client_key collision.
void insert_payment(Db& db, const Payment& p);

// Writes one outbox event for `p` as it is now; returns the event id. `request_id`: the
// request whose transition this is (NULL for the engine's).
std::string insert_outbox_event(Db& db, EventType type, const Payment& p, UnixMillis now,
                                Random& rng, const std::optional<std::string>& request_id = std::nullopt);
// The same with an event id drawn before (insert_created draws it first, as PostgreSQL's does).
std::string insert_outbox_event_as(Db& db, std::string event_id, EventType type, const Payment& p,
                                   UnixMillis now, const std::optional<std::string>& request_id);

// The SELECT of whole payment rows (with the latest reconciliation case) followed by `where`
// (WHERE, ORDER BY, LIMIT): portable SQL, shared by both drivers' decoders, which read the
// columns in its order.
std::string select_payments(std::string_view where);
// The same over `relation` in place of the payments table: on PostgreSQL, a CTE of the rows an
// UPDATE ... RETURNING * just wrote, read with their refunded payment and latest case in that
// statement.
std::string select_payments_of(std::string_view relation, std::string_view where);

// The current row of a select_payments() statement.
Payment read_payment_row(const Stmt& st);

// payments.metadata: a JSON object of strings, as stored.
std::map<std::string, std::string> parse_metadata(const std::string& text);
std::string serialize_metadata(const std::map<std::string, std::string>& md);

// Counts per state, for /status and tests.
std::int64_t count_payments(Db& db, std::optional<PaymentState> state);

}  // namespace payorch::store
