#pragma once
// Exposure: the money that may be at a vendor without a final answer, as the schema's
// triggers keep it per provider and currency, and the check of those kept figures against a
// recount. The caller owns the transaction.
#include <cstdint>
#include <string>
#include <vector>

#include "core/risk.h"
#include "store/sqlite.h"

namespace payorch::store {

struct ExposureRow {
  std::string provider;
  std::string currency;
  std::int64_t count = 0;
  std::int64_t amount_minor = 0;
  friend bool operator==(const ExposureRow&, const ExposureRow&) = default;
};
// UNKNOWN payments plus submits in flight (started, not ended), per provider and currency, as
// kept by the schema's triggers in the transaction of every change (schema 005): a read of a
// few rows, whatever the number of payments. Rows with nothing exposed are left out.
std::vector<ExposureRow> exposure(Db& db);

// The provider's kept exposure: its count over every currency, its amount in `currency`.
ExposureFigures exposure_of(Db& db, const std::string& provider, const std::string& currency);

// Where the kept figures and a recount from the payments themselves (non-terminal ones only)
// disagree: one line per provider and currency, naming both figures; empty when they agree.
// For checks (payorchd check-exposure, the test layers), never the hot path.
std::vector<std::string> exposure_differences(Db& db);
// The statement behind it, for checks that look at the file through their own connection:
// one row (provider, currency, kept count, kept amount, recounted count, recounted amount) per
// difference.
extern const char* const exposure_difference_query;

}  // namespace payorch::store
