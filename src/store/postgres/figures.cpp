#include "store/postgres/figures.h"

#include "core/state_machine.h"

namespace payorch::store::pg {

StatusCounts status_counts(Connection& conn) {
  StatusCounts s;
  // payment_counts holds a row per state from the schema on, kept by its triggers.
  const Result by_state = conn.exec("SELECT state, count FROM payment_counts");
  for (int row = 0; row < by_state.rows(); ++row)
    s.payments_by_state[by_state.text(row, 0)] = by_state.integer(row, 1);
  const Result open = conn.exec(
      "SELECT COUNT(*), MIN(opened_at) FROM reconciliation_cases WHERE status = 'open'");
  s.open_cases = open.integer(0, 0);
  s.oldest_open_case_at = open.opt_integer(0, 1);
  for (auto r : {CaseReason::retry_budget_exhausted, CaseReason::unrecoverable_contract,
                 CaseReason::key_retention_expiring, CaseReason::late_contradiction,
                 CaseReason::callback_mismatch, CaseReason::vendor_key_mismatch})
    s.open_cases_by_reason[std::string(to_string(r))] = 0;
  const Result by_reason = conn.exec(
      "SELECT reason, COUNT(*) FROM reconciliation_cases WHERE status = 'open' GROUP BY reason");
  for (int row = 0; row < by_reason.rows(); ++row)
    s.open_cases_by_reason[by_reason.text(row, 0)] = by_reason.integer(row, 1);
  return s;
}

std::vector<ExposureRow> exposure(Connection& conn) {
  const Result r = conn.exec(
      "SELECT provider, currency, count, amount_minor FROM exposure WHERE count > 0"
      " ORDER BY provider, currency");
  std::vector<ExposureRow> out;
  for (int row = 0; row < r.rows(); ++row)
    out.push_back({r.text(row, 0), r.text(row, 1), r.integer(row, 2), r.integer(row, 3)});
  return out;
}

ExposureFigures exposure_of(Connection& conn, const std::string& provider, const std::string& currency) {
  const Result r = conn.exec(
      "SELECT COALESCE(SUM(count), 0), COALESCE(SUM(CASE WHEN currency = $2 THEN amount_minor END), 0)"
      " FROM exposure WHERE provider = $1",
      {provider, currency});
  return {r.integer(0, 0), r.integer(0, 1)};
}

std::vector<std::string> exposure_differences(Connection& conn) {
  // The same recount as on SQLite (store/exposure.h), over the same generated column.
  const Result r = conn.exec(exposure_difference_query);
  std::vector<std::string> out;
  for (int row = 0; row < r.rows(); ++row)
    out.push_back(r.text(row, 0) + " " + r.text(row, 1) + ": kept " + r.text(row, 2) +
                  " payment(s), " + r.text(row, 3) + " minor units; recounted " + r.text(row, 4) +
                  " payment(s), " + r.text(row, 5) + " minor units");
  return out;
}

}  // namespace payorch::store::pg
