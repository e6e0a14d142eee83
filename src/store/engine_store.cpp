#include "store/engine_store.h"

namespace payorch::store {

bool record_call_started(Db& db, const std::string& payment_id, std::int64_t fence, bool submit,
                         UnixMillis now) {
  // Crash timeline: once this commits, a submit counts as "maybe sent" — whoever claims the
  // payment next treats it as UNKNOWN and recovers by the same client_key.
  db.prepare(
        "UPDATE payments SET attempt_count = attempt_count + 1,"
        " first_submit_at = CASE WHEN ?1 THEN COALESCE(first_submit_at, ?2) ELSE first_submit_at END,"
        " last_submit_started_at = CASE WHEN ?1 THEN ?2 ELSE last_submit_started_at END"
        " WHERE id = ?3 AND fence = ?4")
      .bind(1, submit ? 1 : 0)
      .bind(2, now)
      .bind(3, payment_id)
      .bind(4, fence)
      .run();
  return db.changes() == 1;
}

bool release_lease(Db& db, const std::string& payment_id, std::int64_t fence, UnixMillis next_attempt_at) {
  db.prepare(
        "UPDATE payments SET lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = ?1"
        " WHERE id = ?2 AND fence = ?3")
      .bind(1, next_attempt_at)
      .bind(2, payment_id)
      .bind(3, fence)
      .run();
  return db.changes() == 1;
}

int release_leases_of(Db& db, const std::string& owner) {
  db.prepare("UPDATE payments SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ?")
      .bind(1, owner)
      .run();
  return db.changes();
}

std::vector<ExposureRow> exposure(Db& db) {
  auto st = db.prepare(
      "SELECT provider, currency, COUNT(*), SUM(amount_minor) FROM payments"
      " WHERE state = 'UNKNOWN' OR (state = 'PROCESSING' AND last_submit_started_at IS NOT NULL"
      "   AND (last_submit_ended_at IS NULL OR last_submit_started_at > last_submit_ended_at))"
      " GROUP BY provider, currency ORDER BY provider, currency");
  std::vector<ExposureRow> out;
  while (st.step()) out.push_back({st.col_text(0), st.col_text(1), st.col_int(2), st.col_int(3)});
  return out;
}

void append_case_evidence(Db& db, const std::string& payment_id, const std::string& evidence_json) {
  db.prepare(
        "UPDATE reconciliation_cases SET evidence = json_insert(evidence, '$[#]', json(?1))"
        " WHERE payment_id = ?2 AND status = 'open'")
      .bind(1, evidence_json)
      .bind(2, payment_id)
      .run();
}

}  // namespace payorch::store
