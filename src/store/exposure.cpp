#include "store/exposure.h"

namespace payorch::store {

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

}  // namespace payorch::store
