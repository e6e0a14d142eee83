#pragma once
// The import of a vendor settlement file (SPEC §6: POST /v1/reconciliation/import): its rows
// judged against the payments, in the caller's transaction (one import, one transaction). It
// throws SqliteError on storage failures.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "store/sqlite.h"

namespace payorch::store {

enum class SettlementStatus { succeeded, failed };  // "declined" reads as failed

struct SettlementRow {
  int line = 0;           // 1-based line in the file (the header is line 1)
  std::string reference;  // our client_key
  SettlementStatus status = SettlementStatus::succeeded;
  std::string status_text;  // as written in the file
  std::int64_t amount_minor = 0;
  std::string currency;
  std::optional<std::string> vendor_reference;
};

struct ImportError {
  int line = 0;
  std::string message;
};

struct SettlementFile {
  std::optional<std::string> header_error;  // set: the file is unusable, nothing was read
  int data_rows = 0;                        // non-blank lines after the header
  std::vector<SettlementRow> rows;          // the well-formed ones
  std::vector<ImportError> errors;          // the malformed ones, by line
};

inline constexpr std::string_view settlement_header =
    "reference,status,amount_minor,currency,vendor_reference";

// Parses CSV (RFC 4180 fields, one record per line; CRLF or LF; blank lines ignored) with the
// header `settlement_header`. A malformed row is reported with its line and skipped; nothing
// else is.
SettlementFile parse_settlement(std::string_view csv);

struct ImportSummary {
  int rows = 0;            // data rows in the file, malformed ones included
  int resolved = 0;        // an open case resolved by the row
  int mismatched = 0;      // amount or currency differ from the intent: a case holds the row
  int unmatched = 0;       // no payment of this provider has that client_key: an orphan case holds the row
  int confirmed = 0;       // agrees with a terminal payment that had no open case
  int contradictions = 0;  // disagrees with a terminal payment: held by a (new) open case
  int finalized = 0;       // a non-terminal payment without a case moved to the row's state
  std::vector<ImportError> errors;
  std::vector<std::string> changed_payments;  // ids of the payments whose row was written
  std::vector<std::string> unmatched_references;  // the unmatched rows' references, in file order
};

// Applies a settlement file of `provider`, in the caller's transaction (one import, one
// transaction). Per well-formed row, with the payment found by (provider, client_key):
//  - no such payment → the row is evidence of the open case for (provider, reference) with no
//    payment, opened if needed (as for a callback naming an unknown client_key);
//  - amount/currency differ from the intent → the row becomes evidence of the open case, or of
//    a new callback_mismatch case (which stops automatic work); nothing is resolved;
//  - an open case → resolved as succeeded / failed_final by "settlement-import" with the row
//    as evidence and its vendor_reference — except that a row never overturns a terminal
//    state by itself: disagreeing with a terminal payment, it is only added to the open case
//    (counted as a contradiction) for an operator to judge;
//  - no open case, terminal payment → agreeing: confirmed; disagreeing: the state machine's
//    late_contradiction (case + payment.escalated) with the row as evidence;
//  - no open case, PROCESSING/UNKNOWN → the vendor's final answer, applied like a recovery
//    query's (CAS on state, event).
// A file with a bad header imports nothing and reports it as the error of line 1.
ImportSummary import_settlement(Db& db, const std::string& provider, std::string_view csv,
                                UnixMillis now, Random& rng);
ImportSummary import_settlement(Db& db, const std::string& provider, const SettlementFile& file,
                                UnixMillis now, Random& rng);

}  // namespace payorch::store
