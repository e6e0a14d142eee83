#include "store/engine_store.h"

#include <boost/json/serialize.hpp>

namespace payorch::store {

bool record_call_started(Db& db, const std::string& payment_id, std::int64_t fence, bool submit,
                         UnixMillis now, Payment* claimed) {
  // Crash timeline: once this commits, a submit counts as "maybe sent" — whoever claims the
  // payment next treats it as UNKNOWN and recovers by the same client_key.
  auto st = db.prepare(
      "UPDATE payments SET attempt_count = attempt_count + 1,"
      " first_submit_at = CASE WHEN ?1 THEN COALESCE(first_submit_at, ?2) ELSE first_submit_at END,"
      " last_submit_started_at = CASE WHEN ?1 THEN ?2 ELSE last_submit_started_at END"
      " WHERE id = ?3 AND fence = ?4"
      " RETURNING attempt_count, first_submit_at, last_submit_started_at");
  st.bind(1, submit ? 1 : 0).bind(2, now).bind(3, payment_id).bind(4, fence);
  if (!st.step()) return false;
  if (claimed) {
    claimed->attempt_count = st.col_int(0);
    claimed->first_submit_at = st.col_opt_int(1);
    claimed->last_submit_started_at = st.col_opt_int(2);
  }
  st.run();  // finishes the statement
  return true;
}

bool undo_call_started(Db& db, const std::string& payment_id, std::int64_t fence,
                       const CallMarks& before, UnixMillis next_attempt_at) {
  db.prepare(
        "UPDATE payments SET attempt_count = ?1, first_submit_at = ?2, last_submit_started_at = ?3,"
        " lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = ?4"
        " WHERE id = ?5 AND fence = ?6")
      .bind(1, before.attempt_count)
      .bind(2, before.first_submit_at)
      .bind(3, before.last_submit_started_at)
      .bind(4, next_attempt_at)
      .bind(5, payment_id)
      .bind(6, fence)
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
      "SELECT provider, currency, count, amount_minor FROM exposure WHERE count > 0"
      " ORDER BY provider, currency");
  std::vector<ExposureRow> out;
  while (st.step()) out.push_back({st.col_text(0), st.col_text(1), st.col_int(2), st.col_int(3)});
  return out;
}

ExposureFigures exposure_of(Db& db, const std::string& provider, const std::string& currency) {
  auto st = db.prepare(
      "SELECT COALESCE(SUM(count), 0), COALESCE(SUM(CASE WHEN currency = ?2 THEN amount_minor END), 0)"
      " FROM exposure WHERE provider = ?1");
  st.bind(1, provider).bind(2, currency);
  st.step();
  return {st.col_int(0), st.col_int(1)};
}

// `exposed` is the schema's generated column (005): the one definition of what counts.
const char* const exposure_difference_query =
    "WITH counted AS ("
    "  SELECT provider, currency, COUNT(*) AS count, SUM(amount_minor) AS amount_minor FROM payments"
    "  WHERE state IN ('PROCESSING','UNKNOWN') AND exposed GROUP BY provider, currency),"
    " kept AS (SELECT provider, currency, count, amount_minor FROM exposure"
    "  WHERE count <> 0 OR amount_minor <> 0)"
    " SELECT COALESCE(k.provider, c.provider), COALESCE(k.currency, c.currency),"
    "  COALESCE(k.count, 0), COALESCE(k.amount_minor, 0), COALESCE(c.count, 0), COALESCE(c.amount_minor, 0)"
    " FROM kept k FULL OUTER JOIN counted c ON k.provider = c.provider AND k.currency = c.currency"
    " WHERE COALESCE(k.count, 0) <> COALESCE(c.count, 0) OR COALESCE(k.amount_minor, 0) <> COALESCE(c.amount_minor, 0)"
    " ORDER BY 1, 2";

std::vector<std::string> exposure_differences(Db& db) {
  auto st = db.prepare(exposure_difference_query);
  std::vector<std::string> out;
  while (st.step())
    out.push_back(st.col_text(0) + " " + st.col_text(1) + ": kept " + std::to_string(st.col_int(2)) +
                  " payment(s), " + std::to_string(st.col_int(3)) + " minor units; recounted " +
                  std::to_string(st.col_int(4)) + " payment(s), " + std::to_string(st.col_int(5)) + " minor units");
  return out;
}

void append_case_evidence(Db& db, const std::string& payment_id, const boost::json::object& evidence) {
  db.prepare(
        "UPDATE reconciliation_cases SET evidence = json_insert(evidence, '$[#]', json(?1))"
        " WHERE payment_id = ?2 AND status = 'open'")
      .bind(1, boost::json::serialize(evidence))
      .bind(2, payment_id)
      .run();
}

}  // namespace payorch::store
