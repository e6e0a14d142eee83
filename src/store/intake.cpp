#include "store/intake.h"

#include <boost/json/serialize.hpp>

#include "core/digest.h"
#include "core/ids.h"
#include "store/history.h"
#include "store/payments.h"

namespace payorch::store {
Payment new_payment(const IntakeRequest& req, UnixMillis now, Random& rng) {
  Payment p;
  p.id = new_payment_id(now, rng);
  p.tenant_id = req.tenant_id;
  p.operation_type = req.intent.operation_type;
  p.operation_id = req.intent.operation_id;
  p.provider = req.provider;
  p.client_key = new_client_key(rng);
  p.request_digest = req.request_digest;
  p.amount_minor = req.intent.amount_minor;
  p.currency = req.intent.currency;
  p.payee = req.intent.payee;
  p.source = req.intent.source;
  p.description = req.intent.description;
  p.metadata = req.intent.metadata;
  p.state = PaymentState::processing;
  p.next_action = NextAction::submit;
  p.next_attempt_at = now;
  p.created_at = now;
  p.updated_at = now;
  p.origin = req.origin;
  return p;
}

IntakeOutcome judge_stored_intake(const IntakeRequest& req, Payment stored) {
  const auto kind = stored.request_digest == req.request_digest ? IntakeOutcome::Kind::replayed
                                                                : IntakeOutcome::Kind::conflict;
  return IntakeOutcome{kind, std::move(stored), req.request_digest};
}

IdempotencyConflict idempotency_conflict(const IntakeRequest& req, const Payment& stored, UnixMillis now) {
  return IdempotencyConflict{req.tenant_id, req.intent.operation_type, req.intent.operation_id,
                             stored.id, stored.request_digest, req.request_digest,
                             jcs_canonicalize(digest_fields(req.intent)), now};
}

void insert_idempotency_conflict(Db& db, const IdempotencyConflict& c) {
  db.prepare(
        "INSERT INTO idempotency_conflicts (tenant_id, operation_type, operation_id, payment_id,"
        " stored_digest, attempted_digest, attempted_body, created_at) VALUES (?,?,?,?,?,?,?,?)")
      .bind(1, c.tenant_id)
      .bind(2, c.operation_type)
      .bind(3, c.operation_id)
      .bind(4, c.payment_id)
      .bind(5, c.stored_digest)
      .bind(6, c.attempted_digest)
      .bind(7, c.attempted_body)
      .bind(8, c.created_at)
      .run();
}

std::optional<std::string> insert_created(Db& db, const Payment& row, UnixMillis now, Random& rng) {
  // The event id is drawn before the insert, whether the row turns out new or not: both drivers
  // draw the same values from `rng` (the simulation compares them run for run).
  std::string event_id = new_event_id(now, rng);
  try {
    db.exec("SAVEPOINT created_insert");
    insert_payment(db, row);
    insert_outbox_event_as(db, event_id, EventType::created, row, now, row.origin.request_id);
    insert_history(db, created_entry(row, event_id, now));
    db.exec("RELEASE created_insert");
    return event_id;
  } catch (const SqliteError& e) {
    db.exec("ROLLBACK TO created_insert");
    db.exec("RELEASE created_insert");
    if (!e.unique_violation()) throw;
    return std::nullopt;
  }
}

IntakeOutcome record_intake(Db& db, const IntakeRequest& req, UnixMillis now, Random& rng) {
  // A collision of the random client_key or id (2^-130, 2^-80 within one ms) is retried with
  // fresh values; a collision of the business key is the idempotency decision.
  for (int attempt = 0;; ++attempt) {
    Payment p = new_payment(req, now, rng);
    if (insert_created(db, p, now, rng))
      return IntakeOutcome{IntakeOutcome::Kind::created, std::move(p), req.request_digest};
    auto stored = find_payment_by_operation(db, req.tenant_id, req.intent.operation_type,
                                            req.intent.operation_id);
    if (!stored) {
      if (attempt < 3) continue;  // an id/client_key collision, not the business key
      throw SqliteError(SQLITE_CONSTRAINT, "intake: unique violation without a stored payment");
    }
    IntakeOutcome out = judge_stored_intake(req, std::move(*stored));
    if (out.kind == IntakeOutcome::Kind::conflict)
      insert_idempotency_conflict(db, idempotency_conflict(req, out.payment, now));
    return out;
  }
}

}  // namespace payorch::store
