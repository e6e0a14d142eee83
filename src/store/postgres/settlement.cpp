#include "store/postgres/settlement.h"

#include "store/postgres/flow_handle.h"
#include "store/postgres/resolution.h"
#include "store/settlement_flow.h"

namespace payorch::store::pg {

ImportSummary import_settlement(const WriteTx& w, const std::string& provider,
                                const SettlementFile& file, const std::string& by, UnixMillis now,
                                Random& rng) {
  return import_settlement_on(w, provider, file, by, now, rng);
}

}  // namespace payorch::store::pg
