#include "store/reconciliation.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <algorithm>
#include <stdexcept>

#include "core/decide.h"
#include "core/duration.h"
#include "core/ids.h"
#include "core/state_machine.h"
#include "store/payments.h"

namespace payorch::store {
namespace {

// A case with no payment (payment_id NULL) keeps its own provider and reference.
constexpr std::string_view case_select =
    "SELECT c.id, c.payment_id, c.reason, c.status, c.opened_at, c.resolved_at, c.outcome,"
    " c.vendor_reference, c.note, c.resolved_by, c.evidence, p.tenant_id, p.operation_id,"
    " COALESCE(p.provider, c.provider), c.reference"
    " FROM reconciliation_cases c LEFT JOIN payments p ON p.id = c.payment_id ";

boost::json::array parse_evidence(const std::string& case_id, const std::string& text) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec || !v.is_array())
    throw std::runtime_error("reconciliation case " + case_id + ": evidence is not a JSON array");
  return std::move(v.as_array());
}

ReconciliationCase read_case(const Stmt& st) {
  ReconciliationCase c;
  int i = 0;
  c.id = st.col_text(i++);
  c.payment_id = st.col_opt_text(i++);
  c.reason = st.col_text(i++);
  const std::string status = st.col_text(i++);
  auto parsed = parse_case_status(status);
  if (!parsed) throw std::runtime_error("reconciliation case " + c.id + ": bad status " + status);
  c.status = *parsed;
  c.opened_at = st.col_int(i++);
  c.resolved_at = st.col_opt_int(i++);
  c.outcome = st.col_opt_text(i++);
  c.vendor_reference = st.col_opt_text(i++);
  c.note = st.col_opt_text(i++);
  c.resolved_by = st.col_opt_text(i++);
  c.evidence = parse_evidence(c.id, st.col_text(i++));
  c.tenant_id = st.col_opt_text(i++);
  c.operation_id = st.col_opt_text(i++);
  c.provider = st.col_text(i++);
  c.reference = st.col_opt_text(i++);
  return c;
}

std::optional<ReconciliationCase> first_case(Stmt& st) {
  if (!st.step()) return std::nullopt;
  return read_case(st);
}

ResolveRefusal refuse(ResolveRefusal::Code code, std::string detail) {
  return ResolveRefusal{code, std::move(detail)};
}

// Why `retry` may not resume this payment, or nullopt when it may: the engine's own test
// (resubmit_outlives_key), or the vendor may have forgotten the key and charge a second time.
std::optional<std::string> retry_refusal(const Payment& p, const Contract& c, UnixMillis now) {
  if (is_terminal(p.state))
    return "payment " + p.id + " is " + std::string(to_string(p.state)) +
           ": a terminal payment cannot be retried; resolve as succeeded or failed_final";
  if (!resubmit_outlives_key(p.first_submit_at, c, now)) return std::nullopt;
  const UnixMillis deadline = resubmit_deadline(*p.first_submit_at, c);
  const UnixMillis latest_end = resubmit_latest_end(c, now);
  return "the vendor may no longer honour client_key " + p.client_key + ": first sent at " +
         format_rfc3339(*p.first_submit_at) + ", key retention " +
         format_duration(c.key_retention) + ", so a retry had to end by " +
         format_rfc3339(deadline) + " and one started now could run until " +
         format_rfc3339(latest_end) +
         "; a retry could charge twice. Check the payment with the vendor and resolve it as "
         "succeeded or failed_final";
}

void close_case(Db& db, const ReconciliationCase& rc, const Resolution& r, UnixMillis now) {
  auto st = db.prepare(
      "UPDATE reconciliation_cases SET status = 'resolved', resolved_at = ?1, outcome = ?2,"
      " vendor_reference = ?3, note = ?4, resolved_by = ?5 WHERE id = ?6 AND status = 'open'");
  st.bind(1, now).bind(2, to_string(r.outcome)).bind(3, r.vendor_reference).bind(4, r.note);
  st.bind(5, r.by).bind(6, rc.id);
  st.run();
  if (db.changes() != 1) throw std::runtime_error("reconciliation case " + rc.id + " changed under us");
  if (r.evidence) append_evidence(db, rc.id, *r.evidence, now);
}

// Applies `t` without a lease (compare-and-set on state alone). Inside the writer's
// transaction the state was just read, so anything but `applied` means the database is not
// what this code believes: throw, and the caller's transaction rolls everything back.
void apply_or_throw(Db& db, const Payment& p, const Transition& t, const TransitionUpdate& u,
                    UnixMillis now, Random& rng) {
  const CasResult r = apply_transition(db, p.id, std::nullopt, t, u, now, rng);
  if (r != CasResult::applied)
    throw std::runtime_error("payment " + p.id + ": " + std::string(to_string(t.from)) + " -> " +
                             std::string(to_string(t.to)) + ": " + std::string(to_string(r)));
}

}  // namespace

std::string_view to_string(CaseStatus s) { return s == CaseStatus::open ? "open" : "resolved"; }

std::optional<CaseStatus> parse_case_status(std::string_view s) {
  if (s == "open") return CaseStatus::open;
  if (s == "resolved") return CaseStatus::resolved;
  return std::nullopt;
}

std::string_view to_string(ResolutionOutcome o) {
  switch (o) {
    case ResolutionOutcome::succeeded: return "succeeded";
    case ResolutionOutcome::failed_final: return "failed_final";
    case ResolutionOutcome::retry: return "retry";
  }
  return "?";
}

std::optional<ResolutionOutcome> parse_resolution_outcome(std::string_view s) {
  for (auto o : {ResolutionOutcome::succeeded, ResolutionOutcome::failed_final, ResolutionOutcome::retry})
    if (to_string(o) == s) return o;
  return std::nullopt;
}

std::optional<ReconciliationCase> find_case(Db& db, const std::string& case_id) {
  auto st = db.prepare(std::string(case_select) + "WHERE c.id = ?");
  st.bind(1, case_id);
  return first_case(st);
}

std::optional<ReconciliationCase> find_open_case(Db& db, const std::string& payment_id) {
  auto st = db.prepare(std::string(case_select) + "WHERE c.payment_id = ? AND c.status = 'open'");
  st.bind(1, payment_id);
  return first_case(st);
}

CasePage list_cases(Db& db, std::optional<CaseStatus> status, int limit,
                    const std::optional<std::string>& cursor) {
  // One more than the page, so next_cursor is null exactly when nothing follows.
  auto st = db.prepare(std::string(case_select) +
                       "WHERE (?1 IS NULL OR c.status = ?1) AND (?2 IS NULL OR c.id < ?2)"
                       " ORDER BY c.id DESC LIMIT ?3");
  if (status) st.bind(1, to_string(*status)); else st.bind_null(1);
  st.bind(2, cursor).bind(3, limit + 1);
  CasePage page;
  while (st.step()) page.cases.push_back(read_case(st));
  if (static_cast<int>(page.cases.size()) > limit) {
    page.cases.pop_back();
    page.next_cursor = page.cases.back().id;
  }
  return page;
}

bool append_evidence(Db& db, const std::string& case_id, boost::json::object entry,
                     UnixMillis now) {
  if (!entry.contains("source")) throw std::invalid_argument("evidence must name its source");
  if (!entry.contains("at")) entry["at"] = format_rfc3339(now);
  auto st = db.prepare("SELECT evidence FROM reconciliation_cases WHERE id = ?");
  st.bind(1, case_id);
  if (!st.step()) return false;
  boost::json::array evidence = parse_evidence(case_id, st.col_text(0));
  st.reset();
  evidence.push_back(std::move(entry));
  db.prepare("UPDATE reconciliation_cases SET evidence = ? WHERE id = ?")
      .bind(1, boost::json::serialize(evidence))
      .bind(2, case_id)
      .run();
  return true;
}

ResolveResult resolve_case(Db& db, const std::string& case_id, const Resolution& r,
                           const Contract& contract, UnixMillis now, Random& rng) {
  using Code = ResolveRefusal::Code;
  auto rc = find_case(db, case_id);
  if (!rc) return refuse(Code::case_not_found, "no reconciliation case " + case_id);
  if (rc->status != CaseStatus::open)
    return refuse(Code::case_not_open, "case " + case_id + " was already resolved (" +
                                           rc->outcome.value_or("?") + ") by " +
                                           rc->resolved_by.value_or("?") + " at " +
                                           format_rfc3339(rc->resolved_at.value_or(0)));
  if (!rc->payment_id) {
    // A charge no payment of ours matched: the operator's decision is the record; there is
    // no payment to change and no tenant to tell.
    if (r.outcome == ResolutionOutcome::retry)
      return refuse(Code::retry_not_allowed,
                    "case " + case_id + " has no payment to retry: " + rc->provider +
                        " reported client_key " + rc->reference.value_or("?") +
                        ", which no payment has; resolve as succeeded or failed_final");
    close_case(db, *rc, r, now);
    Resolved out;
    out.resolved_case = *find_case(db, case_id);
    return out;
  }
  auto p = find_payment_by_id(db, *rc->payment_id);
  if (!p) throw std::runtime_error("case " + case_id + ": payment " + *rc->payment_id + " missing");

  // Decide everything before the first write: a refusal writes nothing.
  std::optional<Transition> t;
  TransitionUpdate u;
  u.next_attempt_at = now;
  u.vendor_reference = r.vendor_reference;
  if (r.outcome == ResolutionOutcome::retry) {
    if (auto why = retry_refusal(*p, contract, now)) return refuse(Code::retry_not_allowed, *why);
    t = resume(p->state, p->vendor_reference.has_value());
    // A lease still held (a case that did not stop automatic work) stays with its holder:
    // releasing it could let a second worker send the same key while the first call is on
    // the wire.
    u.release_lease = false;
  } else {
    const bool success = r.outcome == ResolutionOutcome::succeeded;
    const PaymentState target = success ? PaymentState::succeeded : PaymentState::failed_final;
    // Already there (only a terminal payment can be): the case closes with no write to the
    // payment and no event — nothing about the payment changed.
    if (p->state != target) {
      t = transition(p->state, success ? Trigger::resolve_succeeded : Trigger::resolve_failed_final);
      if (!success) {
        u.failure_code = "reconciliation_failed";
        u.failure_message = "marked failed by reconciliation case " + case_id;
      }
    }
  }
  // resolve_* is legal from every state and resolve_retry from every non-terminal one.
  if (r.outcome == ResolutionOutcome::retry && !t)
    throw std::logic_error("resolve_retry refused from " + std::string(to_string(p->state)));

  // The case closes first, so the outbox event's payment view already shows it resolved.
  close_case(db, *rc, r, now);
  if (t) {
    if (r.outcome == ResolutionOutcome::retry) {
      // A fresh budget: max_attempts and give_up_after count from now. Key retention still
      // counts from first_submit_at (checked above): the vendor's clock does not reset.
      db.prepare(
            "UPDATE payments SET budget_started_at = ?1, budget_attempts_base = attempt_count"
            " WHERE id = ?2")
          .bind(1, now)
          .bind(2, p->id)
          .run();
    } else if (t->to == PaymentState::succeeded) {
      // A failure left from an earlier FAILED_FINAL no longer describes the payment.
      db.prepare("UPDATE payments SET failure_code = NULL, failure_message = NULL WHERE id = ?")
          .bind(1, p->id)
          .run();
    }
    u.next_action = t->next;
    apply_or_throw(db, *p, *t, u, now, rng);
  }
  // Crash timeline: nothing above is visible until the caller commits. Dying before the
  // commit leaves the case open and the payment as it was (the operator resolves again);
  // after it, the case, the payment and its outbox event are all there together.
  Resolved out;
  out.resolved_case = *find_case(db, case_id);
  out.payment = *find_payment_by_id(db, p->id);
  if (t) out.event = t->event;
  return out;
}

// ---- Vendor reports that need a human ----

std::optional<Payment> find_payment_by_client_key(Db& db, const std::string& provider,
                                                  const std::string& client_key) {
  auto st = db.prepare("SELECT id FROM payments WHERE provider = ? AND client_key = ?");
  st.bind(1, provider).bind(2, client_key);
  if (!st.step()) return std::nullopt;
  const std::string id = st.col_text(0);
  st.reset();
  return find_payment_by_id(db, id);
}

Transition mismatch_escalation(PaymentState state) {
  // SPEC §6 names callback_mismatch for any vendor report that disagrees with the stored
  // intent. give_up is the state machine's escalation of a non-terminal payment; a terminal
  // one escalates the same way as a late contradiction (no state change, payment.escalated):
  // the state machine has no trigger for "the vendor's record disagrees on the amount".
  if (is_terminal(state))
    return Transition{state, state, NextAction::none, EventType::escalated,
                      CaseReason::callback_mismatch, false};
  return *transition(state, Trigger::give_up, CaseReason::callback_mismatch);
}

Held hold_with_evidence(Db& db, const Payment& p, const Transition& escalation,
                        boost::json::object evidence, UnixMillis now, Random& rng) {
  if (!escalation.open_case) throw std::logic_error("hold_with_evidence: the transition opens no case");
  Held held;
  auto open = find_open_case(db, p.id);
  if (!open) {
    // Applying an escalation while a case is open would write a second payment.escalated for
    // no new case (the unique index keeps the case single, not the event): only without one.
    TransitionUpdate u;
    u.next_attempt_at = now;
    apply_or_throw(db, p, escalation, u, now, rng);
    held.event = escalation.event;
    open = find_open_case(db, p.id);
  }
  held.case_id = open->id;
  append_evidence(db, held.case_id, std::move(evidence), now);
  return held;
}

std::string hold_unknown_reference(Db& db, const std::string& provider, const std::string& reference,
                                   boost::json::object evidence, UnixMillis now, Random& rng) {
  // At most one open case per (provider, reference) (unique index): a later report joins it.
  auto st = db.prepare(
      "INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at, provider,"
      " reference) VALUES (?1, NULL, ?2, 'open', ?3, ?4, ?5)"
      " ON CONFLICT (provider, reference) WHERE status = 'open' AND payment_id IS NULL"
      " DO UPDATE SET id = id RETURNING id");
  st.bind(1, new_case_id(now, rng)).bind(2, to_string(CaseReason::callback_mismatch)).bind(3, now);
  st.bind(4, provider).bind(5, reference);
  if (!st.step()) throw std::runtime_error("reconciliation case for " + reference + " not written");
  std::string case_id = st.col_text(0);
  st.run();
  append_evidence(db, case_id, std::move(evidence), now);
  return case_id;
}

// ---- Settlement import ----

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
  apply_or_throw(db, *p, *t, u, now, rng);
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
