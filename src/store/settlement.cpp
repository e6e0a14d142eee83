#include "store/settlement.h"

#include <boost/json/object.hpp>

#include "store/payments.h"
#include "store/settlement_flow.h"

namespace payorch::store {

boost::json::object row_evidence(const std::string& provider, const SettlementRow& row,
                                 std::string_view finding) {
  boost::json::object e{{"source", "settlement-import"},
                        {"finding", finding},
                        {"provider", provider},
                        {"line", row.line},
                        {"reference", row.reference},
                        {"status", row.status_text},
                        {"amount_minor", row.amount_minor},
                        {"currency", row.currency},
                        {"kind", to_string(row.kind)}};
  if (row.vendor_reference) e["vendor_reference"] = *row.vendor_reference;
  else e["vendor_reference"] = nullptr;
  return e;
}

ImportSummary import_settlement(Db& db, const std::string& provider, std::string_view csv,
                                const std::string& by, UnixMillis now, Random& rng) {
  return import_settlement(db, provider, parse_settlement(csv), by, now, rng);
}

ImportSummary import_settlement(Db& db, const std::string& provider, const SettlementFile& file,
                                const std::string& by, UnixMillis now, Random& rng) {
  return import_settlement_on(db, provider, file, by, now, rng);
}

}  // namespace payorch::store
