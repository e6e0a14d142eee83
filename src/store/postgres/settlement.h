#pragma once
// The import of a vendor settlement file on PostgreSQL: store::import_settlement's contract
// (store/settlement.h), one import in the caller's READ COMMITTED transaction. Throws pg::Error.
// Each row's payment is locked (lock_payment) before it is judged, as a callback's is, and stays
// locked until the import commits: an import and a callback or an operator working on the same
// payment take turns. Two imports that lock the same payments in another order may deadlock;
// PostgreSQL then aborts one, and the store runs it again (pg::run_transaction).
#include "core/clock.h"
#include "store/postgres/transitions.h"
#include "store/settlement.h"

namespace payorch::store::pg {

ImportSummary import_settlement(const WriteTx& w, const std::string& provider,
                                const SettlementFile& file, const std::string& by, UnixMillis now,
                                Random& rng);

}  // namespace payorch::store::pg
