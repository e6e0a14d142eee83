#include "store/settlement.h"

#include <boost/json/object.hpp>
#include <algorithm>
#include <variant>

#include "core/state_machine.h"
#include "store/cases.h"
#include "store/payments.h"
#include "store/resolution.h"
#include "store/transitions.h"

namespace payorch::store {

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

// One data line: the row, or what is wrong with it (every problem, "; "-separated).
std::variant<SettlementRow, std::string> parse_row(int line_no, std::string_view line) {
  std::string error;
  auto fields = split_record(line, error);
  if (!fields) return error;
  if (fields->size() != 5)
    return "expected 5 columns (" + std::string(settlement_header) + "), found " +
           std::to_string(fields->size());
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
  if (problems.empty()) return row;
  std::string joined;
  for (const auto& p : problems) joined += (joined.empty() ? "" : "; ") + p;
  return joined;
}

boost::json::object row_evidence(const std::string& provider, const SettlementRow& row,
                                 std::string_view finding) {
  boost::json::object e{{"source", "settlement-import"},
                        {"finding", finding},
                        {"provider", provider},
                        {"line", row.line},
                        {"reference", row.reference},
                        {"status", row.status_text},
                        {"amount_minor", row.amount_minor},
                        {"currency", row.currency}};
  if (row.vendor_reference) e["vendor_reference"] = *row.vendor_reference;
  else e["vendor_reference"] = nullptr;
  return e;
}

void apply_row(Db& db, const std::string& provider, const SettlementRow& row, UnixMillis now,
               Random& rng, ImportSummary& s) {
  auto p = find_payment_by_client_key(db, provider, row.reference);
  if (!p) {
    // The vendor settled a charge no payment of ours made (or made under another provider):
    // money moved that only a human can account for, so it is stored and named, never only
    // counted.
    hold_unknown_reference(db, provider, row.reference, row_evidence(provider, row, "unmatched"), now, rng);
    s.unmatched_references.push_back(row.reference);
    ++s.unmatched;
    return;
  }
  if (row.amount_minor != p->amount_minor || row.currency != p->currency) {
    // The vendor settled an amount or currency other than the intent: a human must look.
    hold_with_evidence(db, *p, mismatch_escalation(p->state),
                       row_evidence(provider, row, "amount_mismatch"), now, rng);
    s.changed_payments.push_back(p->id);
    ++s.mismatched;
    return;
  }
  const bool success = row.status == SettlementStatus::succeeded;
  const PaymentState answer = success ? PaymentState::succeeded : PaymentState::failed_final;
  if (auto open = find_open_case(db, p->id)) {
    // A file never overturns a terminal state by itself: that stays an operator's call
    // (invariant 4), so a disagreeing row is evidence for the human, and importing the same
    // file twice cannot correct what the first import only escalated.
    if (is_terminal(p->state) && p->state != answer) {
      append_evidence(db, open->id, row_evidence(provider, row, "contradiction"), now);
      ++s.contradictions;
      return;
    }
    Resolution r;
    r.outcome = success ? ResolutionOutcome::succeeded : ResolutionOutcome::failed_final;
    r.vendor_reference = row.vendor_reference;
    r.note = "settlement file";
    r.by = "settlement-import";
    r.evidence = row_evidence(provider, row, "resolves");
    // The contract is read only by `retry`, which an import never asks for.
    auto result = resolve_case(db, open->id, r, Contract{}, now, rng);
    if (auto* refusal = std::get_if<ResolveRefusal>(&result))
      s.errors.push_back({row.line, refusal->detail});
    else
      ++s.resolved;
    s.changed_payments.push_back(p->id);
    return;
  }
  if (p->state == answer) {
    ++s.confirmed;
    return;
  }
  // The vendor's final word, as a recovery query would report it: on a terminal payment the
  // state machine opens late_contradiction (no state change); otherwise the payment moves.
  auto t = transition(p->state, success ? Trigger::recovery_succeeded : Trigger::recovery_declined);
  TransitionUpdate u;
  u.next_attempt_at = now;
  if (!is_terminal(p->state)) {
    u.vendor_reference = row.vendor_reference;
    if (!success) {
      u.failure_code = row.status_text;
      u.failure_message = "reported by the vendor's settlement file";
    }
  }
  apply_unleased(db, *p, *t, u, now, rng);
  s.changed_payments.push_back(p->id);
  if (t->open_case) {
    append_evidence(db, find_open_case(db, p->id)->id, row_evidence(provider, row, "contradiction"),
                    now);
    ++s.contradictions;
  } else {
    ++s.finalized;
  }
}

}  // namespace

SettlementFile parse_settlement(std::string_view csv) {
  SettlementFile file;
  if (csv.starts_with("\xEF\xBB\xBF")) csv.remove_prefix(3);  // a UTF-8 byte order mark
  int line_no = 0;
  bool header_seen = false;
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
      if (joined != settlement_header) {
        file.header_error = "line 1: expected the header '" + std::string(settlement_header) +
                            "', found '" + std::string(line) + "'";
        return file;
      }
      continue;
    }
    if (trim(line).empty()) continue;
    ++file.data_rows;
    auto parsed = parse_row(line_no, line);
    if (auto* row = std::get_if<SettlementRow>(&parsed))
      file.rows.push_back(std::move(*row));
    else
      file.errors.push_back({line_no, std::get<std::string>(parsed)});
  }
  if (!header_seen)
    file.header_error = "the file is empty; expected the header '" + std::string(settlement_header) + "'";
  return file;
}

ImportSummary import_settlement(Db& db, const std::string& provider, std::string_view csv,
                                UnixMillis now, Random& rng) {
  return import_settlement(db, provider, parse_settlement(csv), now, rng);
}

ImportSummary import_settlement(Db& db, const std::string& provider, const SettlementFile& file,
                                UnixMillis now, Random& rng) {
  ImportSummary s;
  if (file.header_error) {
    s.errors.push_back({1, *file.header_error});
    return s;
  }
  s.rows = file.data_rows;
  s.errors = file.errors;
  for (const auto& row : file.rows) apply_row(db, provider, row, now, rng, s);
  std::stable_sort(s.errors.begin(), s.errors.end(),
                   [](const ImportError& a, const ImportError& b) { return a.line < b.line; });
  std::sort(s.changed_payments.begin(), s.changed_payments.end());
  s.changed_payments.erase(std::unique(s.changed_payments.begin(), s.changed_payments.end()),
                           s.changed_payments.end());
  // Crash timeline: the whole file is one transaction. Dying before the caller commits leaves
  // no row applied. Importing the same file again changes no state: rows that resolved a case
  // are then confirmed, and mismatch rows add their evidence once more.
  return s;
}

}  // namespace payorch::store
