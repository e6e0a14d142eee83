#include "core/settlement_csv.h"

#include <algorithm>
#include <variant>

#include "core/utf8.h"

namespace payorch {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Splits one CSV record (RFC 4180 quoting, within one line). Unquoted fields are trimmed.
// Returns nullopt with `error` set when the quoting is malformed.
std::optional<std::vector<std::string>> split_record(std::string_view line, std::string& error) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  for (;;) {
    std::string field;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      for (++i;; ++i) {
        if (i >= line.size()) {
          error = "unterminated quoted field";
          return std::nullopt;
        }
        if (line[i] != '"') {
          field += line[i];
        } else if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          break;
        }
      }
      ++i;  // the closing quote
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i < line.size() && line[i] != ',') {
        error = "text after a closing quote";
        return std::nullopt;
      }
    } else {
      std::size_t end = std::min(line.find(',', i), line.size());
      field = std::string(trim(line.substr(i, end - i)));
      if (field.find('"') != std::string::npos) {
        error = "a quote inside an unquoted field";
        return std::nullopt;
      }
      i = end;
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) return fields;
    ++i;  // the comma
  }
}

std::optional<std::int64_t> parse_amount(std::string_view s) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > 9'007'199'254'740'991) return std::nullopt;
  return v;
}

bool upper_alpha3(std::string_view s) {
  if (s.size() != 3) return false;
  for (char c : s)
    if (c < 'A' || c > 'Z') return false;
  return true;
}

// One data line under `header` (with or without the kind column): the row, or what is wrong
// with it (every problem, "; "-separated).
std::variant<SettlementRow, std::string> parse_row(int line_no, std::string_view line,
                                                   std::string_view header) {
  const bool with_kind = header == settlement_kind_header;
  const std::size_t columns = with_kind ? 6 : 5;
  std::string error;
  auto fields = split_record(line, error);
  if (!fields) return error;
  if (fields->size() != columns)
    return "expected " + std::to_string(columns) + " columns (" + std::string(header) +
           "), found " + std::to_string(fields->size());
  const auto& f = *fields;
  SettlementRow row;
  row.line = line_no;
  std::vector<std::string> problems;
  row.reference = f[0];
  if (row.reference.empty()) problems.push_back("reference is empty");
  row.status_text = lower(f[1]);
  if (row.status_text == "succeeded")
    row.status = SettlementStatus::succeeded;
  else if (row.status_text == "failed" || row.status_text == "declined")
    row.status = SettlementStatus::failed;
  else
    problems.push_back("status '" + f[1] + "' is not succeeded, failed or declined");
  if (auto amount = parse_amount(f[2]))
    row.amount_minor = *amount;
  else
    problems.push_back("amount_minor '" + f[2] + "' is not an integer from 1 to 9007199254740991");
  row.currency = f[3];
  if (!upper_alpha3(row.currency))
    problems.push_back("currency '" + f[3] + "' is not an upper-case ISO 4217 code");
  if (!f[4].empty()) row.vendor_reference = f[4];
  if (with_kind) {
    const std::string kind = lower(f[5]);
    if (kind == "charge")
      row.kind = SettlementKind::charge;
    else if (kind == "refund")
      row.kind = SettlementKind::refund;
    else
      problems.push_back("kind '" + f[5] + "' is not charge or refund");
  }
  if (problems.empty()) return row;
  std::string joined;
  for (const auto& p : problems) joined += (joined.empty() ? "" : "; ") + p;
  return joined;
}

// A field as split_record reads it back: quoted when it holds a comma, a quote or a carriage
// return, or starts or ends with a space or a tab (which an unquoted field loses).
std::string csv_field(std::string_view f) {
  const bool quote = f.find_first_of(",\"\r") != std::string_view::npos ||
                     (!f.empty() && (f.front() == ' ' || f.front() == '\t' || f.back() == ' ' ||
                                     f.back() == '\t'));
  if (!quote) return std::string(f);
  std::string out = "\"";
  for (char c : f) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace

std::string_view to_string(SettlementKind k) { return k == SettlementKind::refund ? "refund" : "charge"; }

SettlementFile parse_settlement(std::string_view csv) {
  SettlementFile file;
  if (csv.starts_with("\xEF\xBB\xBF")) csv.remove_prefix(3);  // a UTF-8 byte order mark
  if (const auto bad = invalid_utf8_at(csv)) {
    const std::string_view before = csv.substr(0, *bad);
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const std::size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
    file.header_error = "line " + std::to_string(line) + ": not valid UTF-8 (byte " +
                        std::to_string(*bad - line_start + 1) + " of the line); nothing was read";
    return file;
  }
  int line_no = 0;
  bool header_seen = false;
  std::string_view header = settlement_header;
  while (!csv.empty()) {
    const std::size_t nl = std::min(csv.find('\n'), csv.size());
    std::string_view line = csv.substr(0, nl);
    csv.remove_prefix(std::min(nl + 1, csv.size()));
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!header_seen) {
      header_seen = true;
      std::string error;
      auto names = split_record(line, error);
      std::string joined;
      for (std::size_t i = 0; names && i < names->size(); ++i)
        joined += (i ? "," : "") + lower((*names)[i]);
      if (joined == settlement_kind_header) {
        header = settlement_kind_header;
      } else if (joined != settlement_header) {
        file.header_error = "line 1: expected the header '" + std::string(settlement_header) +
                            "' (optionally with ',kind'), found '" + std::string(line) + "'";
        return file;
      }
      continue;
    }
    if (trim(line).empty()) continue;
    ++file.data_rows;
    auto parsed = parse_row(line_no, line, header);
    if (auto* row = std::get_if<SettlementRow>(&parsed))
      file.rows.push_back(std::move(*row));
    else
      file.errors.push_back({line_no, std::get<std::string>(parsed)});
  }
  if (!header_seen)
    file.header_error = "the file is empty; expected the header '" + std::string(settlement_header) + "'";
  return file;
}

std::string format_settlement_row(const SettlementRow& row) {
  return csv_field(row.reference) + "," + csv_field(row.status_text) + "," +
         std::to_string(row.amount_minor) + "," + csv_field(row.currency) + "," +
         csv_field(row.vendor_reference.value_or("")) + "," + std::string(to_string(row.kind));
}

}  // namespace payorch
