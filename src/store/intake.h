#pragma once
// The intake transaction (docs/contract.md §2): one payment per (tenant, operation_type, operation_id),
// decided by the unique constraint inside the transaction.
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/intent.h"
#include "core/payment.h"
#include "store/sqlite.h"

namespace payorch::store {

struct IntakeRequest {
  std::string tenant_id;
  Intent intent;
  std::string provider;        // resolved: the request's, or routing.default_provider
  std::string request_digest;
};

struct IntakeOutcome {
  enum class Kind { created, replayed, conflict } kind = Kind::created;
  Payment payment;             // created: the new row; replayed/conflict: the stored one
  std::string attempted_digest;
};

// Runs inside the caller's transaction (or savepoint). Inserts the payment in PROCESSING with a
// fresh client_key and its payment.created outbox event. If the business key exists, reads the
// committed row: same digest → replayed; other digest → conflict, with an audit row. Throws
// SqliteError on anything else (busy, I/O); the caller rolls back.
//
// Crash timeline: dying anywhere in here leaves nothing (the transaction is not committed); the
// client retries with the same key and this runs again from scratch.
// The row an intake inserts for `req`: PROCESSING, due now, with a fresh id and client_key.
Payment new_payment(const IntakeRequest& req, UnixMillis now, Random& rng);

IntakeOutcome record_intake(Db& db, const IntakeRequest& req, UnixMillis now, Random& rng);

}  // namespace payorch::store
