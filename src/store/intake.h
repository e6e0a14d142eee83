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
  RequestOrigin origin;        // kept with the new payment
};

struct IntakeOutcome {
  enum class Kind { created, replayed, conflict } kind = Kind::created;
  Payment payment;             // created: the new row; replayed/conflict: the stored one
  std::string attempted_digest;
};

// The row an intake inserts for `req`: PROCESSING, next_action submit, due now, with a fresh id
// and client_key from `rng`; nothing is written.
Payment new_payment(const IntakeRequest& req, UnixMillis now, Random& rng);

// What a request whose business key is already stored gets: replayed with the same
// request_digest, a conflict with another; `stored` is the stored payment. Both drivers decide
// here.
IntakeOutcome judge_stored_intake(const IntakeRequest& req, Payment stored);

// The idempotency_conflicts audit row of a conflicting request.
struct IdempotencyConflict {
  std::string tenant_id, operation_type, operation_id, payment_id;
  std::string stored_digest, attempted_digest;
  std::string attempted_body;  // the attempt's digest fields in canonical form
  UnixMillis created_at = 0;
};
IdempotencyConflict idempotency_conflict(const IntakeRequest& req, const Payment& stored, UnixMillis now);
// Writes the audit row (SQLite).
void insert_idempotency_conflict(Db& db, const IdempotencyConflict& c);

// Inserts a new payment or refund row (new_payment, new_refund) with its created event and
// its history entry, all or nothing; returns the event's id, or nullopt (nothing written) when
// a unique constraint already holds a row with its business key, id or client_key. Throws on
// anything else. Each driver has one (store/postgres/payments.h: one statement).
std::optional<std::string> insert_created(Db& db, const Payment& row, UnixMillis now, Random& rng);

// Records one payment request, inside the caller's transaction (the Writer's job savepoint):
//  - created: the business key (tenant_id, operation_type, operation_id) is new. The payment
//    (new_payment) and its payment.created outbox event are inserted under one savepoint. A
//    collision of the random id or client_key is retried with fresh values, at most three times.
//  - replayed: the key exists with the same request_digest. The stored payment; nothing written.
//  - conflict: the key exists with another digest. The stored payment, and one audit row in
//    idempotency_conflicts (both digests, the attempted body in canonical form).
// The unique constraint decides inside the transaction, so two concurrent requests with one key
// create one payment. Throws SqliteError on anything else (busy, I/O); the caller rolls back.
//
// Crash timeline: nothing here is durable before the caller commits. Dying before the commit
// leaves no payment, no event and no audit row: the client retries with the same key and this
// runs again from scratch. Dying after the commit, before the answer is sent: the retry finds
// the key and is replayed (or, with another body, a conflict). No vendor call precedes the
// commit: the engine only claims committed rows.
IntakeOutcome record_intake(Db& db, const IntakeRequest& req, UnixMillis now, Random& rng);

}  // namespace payorch::store
