// Fuzz target: the settlement file parser (core::parse_settlement, docs/contract.md §6 import).
//
// Input: the file's text, parsed as it is and again behind each valid header line (with and
// without the kind column), so that mutated inputs reach the rows whether or not they kept the
// header.
//
// Properties: parsing never crashes; a file with a header error reads nothing; otherwise every
// non-blank line after the header is accounted for exactly once, in file order — a row or an
// error naming its line — and data_rows counts them; every row satisfies the rules the parser
// promises (non-empty reference, a known status, amount from 1 to 2^53 - 1, an upper-case
// three-letter currency, a vendor_reference absent or non-empty, a charge unless the header has
// the kind column); and a row written back with
// format_settlement_row parses as the same row.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/settlement_csv.h"
#include "fuzz_check.h"

namespace {

using namespace payorch;

bool blank(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t') return false;
  return true;
}

// The lines a parse must account for, by number: the non-blank ones after the first.
std::vector<int> data_lines(std::string_view csv) {
  if (csv.starts_with("\xEF\xBB\xBF")) csv.remove_prefix(3);
  std::vector<int> out;
  int line_no = 0;
  while (!csv.empty()) {
    const std::size_t nl = csv.find('\n');
    std::string_view line = csv.substr(0, nl);
    csv = nl == std::string_view::npos ? std::string_view() : csv.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no > 1 && !blank(line)) out.push_back(line_no);
  }
  return out;
}

bool upper_alpha3(std::string_view s) {
  if (s.size() != 3) return false;
  for (char c : s)
    if (c < 'A' || c > 'Z') return false;
  return true;
}

std::string describe(const SettlementRow& r) {
  return "line " + std::to_string(r.line) + ": [" + r.reference + "] [" + r.status_text + "] " +
         std::to_string(r.amount_minor) + " [" + r.currency + "] [" + r.vendor_reference.value_or("<none>") +
         "] -> " + format_settlement_row(r);
}

void check(std::string_view csv) {
  const SettlementFile file = parse_settlement(csv);
  if (file.header_error) {
    FUZZ_CHECK(file.rows.empty() && file.errors.empty() && file.data_rows == 0);
    FUZZ_CHECK(!file.header_error->empty());
    return;
  }
  // Every data line once, in order, as a row or an error.
  std::vector<int> seen;
  std::size_t r = 0, e = 0;
  while (r < file.rows.size() || e < file.errors.size()) {
    const bool take_row =
        e == file.errors.size() || (r < file.rows.size() && file.rows[r].line < file.errors[e].line);
    seen.push_back(take_row ? file.rows[r++].line : file.errors[e++].line);
  }
  const std::vector<int> expected = data_lines(csv);
  FUZZ_CHECK_MSG(seen == expected, "a data line is missing, repeated, out of order or invented");
  FUZZ_CHECK(file.data_rows == static_cast<int>(expected.size()));
  for (const ImportError& err : file.errors) FUZZ_CHECK(!err.message.empty());

  std::string_view body = csv.starts_with("\xEF\xBB\xBF") ? csv.substr(3) : csv;
  body = body.substr(0, body.find('\n'));
  if (body.ends_with('\r')) body.remove_suffix(1);
  for (const SettlementRow& row : file.rows) {
    const std::string what = describe(row);
    // Only a file whose header has the kind column (six names) can settle a refund.
    if (std::count(body.begin(), body.end(), ',') < 5) FUZZ_CHECK_MSG(row.kind == SettlementKind::charge, what);
    FUZZ_CHECK_MSG(!row.reference.empty(), what);
    FUZZ_CHECK_MSG(row.amount_minor >= 1 && row.amount_minor <= 9'007'199'254'740'991, what);
    FUZZ_CHECK_MSG(upper_alpha3(row.currency), what);
    FUZZ_CHECK_MSG(!row.vendor_reference || !row.vendor_reference->empty(), what);
    const bool failed = row.status_text == "failed" || row.status_text == "declined";
    FUZZ_CHECK_MSG(failed || row.status_text == "succeeded", what);
    FUZZ_CHECK_MSG(row.status == (failed ? SettlementStatus::failed : SettlementStatus::succeeded), what);

    // Written back, the row reads as itself.
    const SettlementFile again =
        parse_settlement(std::string(settlement_kind_header) + "\n" + format_settlement_row(row));
    FUZZ_CHECK_MSG(!again.header_error && again.errors.empty() && again.rows.size() == 1, what);
    const SettlementRow& back = again.rows.front();
    FUZZ_CHECK_MSG(back.line == 2 && back.reference == row.reference && back.status == row.status &&
                       back.status_text == row.status_text && back.amount_minor == row.amount_minor &&
                       back.currency == row.currency && back.vendor_reference == row.vendor_reference && back.kind == row.kind,
                   what);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view csv(reinterpret_cast<const char*>(data), size);
  check(csv);
  check(std::string(settlement_header) + "\n" + std::string(csv));
  check(std::string(settlement_kind_header) + "\n" + std::string(csv));
  return 0;
}
