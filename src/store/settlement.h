#pragma once
// The import of a vendor settlement file (docs/contract.md §6: POST /v1/reconciliation/import): its rows
// judged against the payments, in the caller's transaction (one import, one transaction). It
// throws SqliteError on storage failures.
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/settlement_csv.h"
#include "store/sqlite.h"

namespace payorch::store {

// The file's text is read by core (core/settlement_csv.h); these are its names here too.
using payorch::ImportError;
using payorch::parse_settlement;
using payorch::settlement_header;
using payorch::settlement_kind_header;
using payorch::SettlementFile;
using payorch::SettlementKind;
using payorch::SettlementRow;
using payorch::SettlementStatus;

struct ImportSummary {
  int rows = 0;            // data rows in the file, malformed ones included
  int resolved = 0;        // an open case resolved by the row
  int mismatched = 0;      // amount, currency or kind differ from the intent (or the row is a
                           // DEFERRED refund, never sent): a case holds the row
  int unmatched = 0;       // no payment of this provider has that client_key: an orphan case holds the row
  int confirmed = 0;       // agrees with a terminal payment that had no open case
  int contradictions = 0;  // disagrees with a terminal payment: held by a (new) open case
  int finalized = 0;       // a non-terminal payment without a case moved to the row's state
  std::vector<ImportError> errors;
  std::vector<std::string> changed_payments;  // ids of the payments whose row was written
  std::vector<std::string> unmatched_references;  // the unmatched rows' references, in file order
};

// Applies a settlement file of `provider`, in the caller's transaction (one import, one
// transaction). Per well-formed row, with the payment found by (provider, client_key) — a
// refund is a row of its own with its own client_key, and settles as a payment does:
//  - no such payment → the row is evidence of the open case for (provider, reference) with no
//    payment, opened if needed (as for a callback naming an unknown client_key);
//  - a DEFERRED refund → as no such payment (it was never sent), the refund untouched;
//  - amount/currency differ from the intent, or the row's kind (charge / refund) from the
//    operation's → the row becomes evidence of the open case, or of a new callback_mismatch
//    case (which stops automatic work); nothing is resolved;
//  - an open case → resolved as succeeded / failed_final by `by` (the importing operator) with the row
//    as evidence and its vendor_reference — except that a row never overturns a terminal
//    state by itself: disagreeing with a terminal payment, it is only added to the open case
//    (counted as a contradiction) for an operator to judge;
//  - no open case, terminal payment → agreeing: confirmed; disagreeing: the state machine's
//    late_contradiction (case + payment.escalated) with the row as evidence;
//  - no open case, PROCESSING/UNKNOWN → the vendor's final answer, applied like a recovery
//    query's (CAS on state, event).
// A file with a bad header imports nothing and reports it as the error of line 1.
ImportSummary import_settlement(Db& db, const std::string& provider, std::string_view csv,
                                const std::string& by, UnixMillis now, Random& rng);
ImportSummary import_settlement(Db& db, const std::string& provider, const SettlementFile& file,
                                const std::string& by, UnixMillis now, Random& rng);

// Shared by both drivers: a settlement row as a case sees it, with the import's finding.
boost::json::object row_evidence(const std::string& provider, const SettlementRow& row,
                                 std::string_view finding);

}  // namespace payorch::store
