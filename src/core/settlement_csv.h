#pragma once
// A vendor settlement file as text (docs/contract.md §6: POST /v1/reconciliation/import): CSV with the
// header `settlement_header`, parsed into rows and line-numbered errors. Pure: no I/O, no
// storage; store/settlement.h judges the rows against the payments.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace payorch {

enum class SettlementStatus { succeeded, failed };  // "declined" reads as failed
// What the vendor settled: a charge (a payment) or a refund.
enum class SettlementKind { charge, refund };
std::string_view to_string(SettlementKind k);  // "charge", "refund"

struct SettlementRow {
  int line = 0;           // 1-based line in the file (the header is line 1)
  std::string reference;  // our client_key
  SettlementStatus status = SettlementStatus::succeeded;
  std::string status_text;  // as written in the file, lower-cased
  std::int64_t amount_minor = 0;
  std::string currency;
  std::optional<std::string> vendor_reference;
  SettlementKind kind = SettlementKind::charge;  // "charge" when the file has no kind column
};

struct ImportError {
  int line = 0;
  std::string message;
};

struct SettlementFile {
  // Set: the file is unusable (no valid header, or not UTF-8), nothing was read.
  std::optional<std::string> header_error;
  int data_rows = 0;                        // non-blank lines after the header
  std::vector<SettlementRow> rows;          // the well-formed ones
  std::vector<ImportError> errors;          // the malformed ones, by line
};

inline constexpr std::string_view settlement_header =
    "reference,status,amount_minor,currency,vendor_reference";
// The header with the kind column, which a file may add last.
inline constexpr std::string_view settlement_kind_header =
    "reference,status,amount_minor,currency,vendor_reference,kind";

// Parses CSV (RFC 4180 fields, one record per line; CRLF or LF; an optional UTF-8 byte order
// mark; blank lines ignored) with the header `settlement_header` or `settlement_kind_header`
// (any case). Every non-blank
// line after the header is accounted for exactly once, in file order: a row, or an error with
// its line and every problem of the line ("; "-separated). data_rows counts them both. Unquoted
// fields are trimmed of spaces and tabs, quoted ones kept as written. A row has five fields: a
// non-empty reference; a status succeeded, failed or declined (any case); an amount_minor from
// 1 to 2^53 - 1 in decimal digits; an upper-case three-letter currency; a vendor_reference,
// empty for none; under `settlement_kind_header`, a sixth, kind: charge or refund (any case).
// Without that column every row is a charge. With a missing or other header, header_error says
// so and nothing else is read; so it does, naming the first such line, for a file that is not
// all UTF-8 (a reference no JSON answer or case evidence could carry).
SettlementFile parse_settlement(std::string_view csv);

// The row as one CSV record in settlement_kind_header's column order (no line end), quoting a
// field only when it must be: parse_settlement reads it back as the same row.
std::string format_settlement_row(const SettlementRow& row);

}  // namespace payorch
