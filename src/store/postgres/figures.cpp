#include "store/postgres/figures.h"

#include <stdexcept>

#include "core/state_machine.h"

namespace payorch::store::pg {

StatusCounts status_counts(Connection& conn) {
  StatusCounts s;
  // payment_counts holds a row per state and shard from the schema on, kept by its triggers
  // (schema/postgres/002): a state's count is the sum over its shards.
  const Result by_state =
      conn.exec("SELECT state, SUM(count)::bigint FROM payment_counts GROUP BY state");
  for (int row = 0; row < by_state.rows(); ++row)
    s.payments_by_state[by_state.text(row, 0)] = by_state.integer(row, 1);
  const Result open = conn.exec(
      "SELECT COUNT(*), MIN(opened_at) FROM reconciliation_cases WHERE status = 'open'");
  s.open_cases = open.integer(0, 0);
  s.oldest_open_case_at = open.opt_integer(0, 1);
  for (auto r : all_case_reasons)
    s.open_cases_by_reason[std::string(to_string(r))] = 0;
  const Result by_reason = conn.exec(
      "SELECT reason, COUNT(*) FROM reconciliation_cases WHERE status = 'open' GROUP BY reason");
  for (int row = 0; row < by_reason.rows(); ++row)
    s.open_cases_by_reason[by_reason.text(row, 0)] = by_reason.integer(row, 1);
  return s;
}

// The exposure rows are per shard (schema/postgres/002): every figure is a sum over them.
std::vector<ExposureRow> exposure(Connection& conn) {
  const Result r = conn.exec(
      "SELECT provider, currency, SUM(count)::bigint, SUM(amount_minor)::bigint FROM exposure"
      " GROUP BY provider, currency HAVING SUM(count) > 0 ORDER BY provider, currency");
  std::vector<ExposureRow> out;
  for (int row = 0; row < r.rows(); ++row)
    out.push_back({r.text(row, 0), r.text(row, 1), r.integer(row, 2), r.integer(row, 3)});
  return out;
}

ExposureFigures exposure_of(Connection& conn, const std::string& provider, const std::string& currency) {
  const Result r = conn.exec(
      "SELECT COALESCE(SUM(count), 0)::bigint,"
      " COALESCE(SUM(CASE WHEN currency = $2 THEN amount_minor END), 0)::bigint"
      " FROM exposure WHERE provider = $1",
      {provider, currency});
  return {r.integer(0, 0), r.integer(0, 1)};
}

std::vector<std::string> exposure_differences(Connection& conn) {
  // The same recount as on SQLite (store/exposure.h), over the same generated column, with the
  // kept figures summed over their shards first: a CTE named exposure stands for the table in
  // the shared query (public.exposure inside it is the table itself).
  static const std::string query = [] {
    const std::string shared = exposure_difference_query;
    const std::string with = "WITH ";
    if (shared.compare(0, with.size(), with) != 0)
      throw std::logic_error("exposure_difference_query no longer starts with WITH");
    return "WITH exposure AS (SELECT provider, currency, SUM(count)::bigint AS count,"
           " SUM(amount_minor)::bigint AS amount_minor FROM public.exposure"
           " GROUP BY provider, currency), " +
           shared.substr(with.size());
  }();
  const Result r = conn.exec(query);
  std::vector<std::string> out;
  for (int row = 0; row < r.rows(); ++row)
    out.push_back(r.text(row, 0) + " " + r.text(row, 1) + ": kept " + r.text(row, 2) +
                  " payment(s), " + r.text(row, 3) + " minor units; recounted " + r.text(row, 4) +
                  " payment(s), " + r.text(row, 5) + " minor units");
  return out;
}

}  // namespace payorch::store::pg
