#include "store/cases.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <stdexcept>

#include "core/enum_names.h"
#include "core/ids.h"
#include "core/utf8.h"
#include "store/transitions.h"
#include "util/log.h"

namespace payorch::store {
namespace {

constexpr EnumNames<CaseStatus, 2> status_names{{
    {CaseStatus::open, "open"},
    {CaseStatus::resolved, "resolved"},
}};

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
  c.refund_id = st.col_opt_text(i++);
  check_case_text(c);
  return c;
}

std::optional<ReconciliationCase> first_case(Stmt& st) {
  if (!st.step()) return std::nullopt;
  return read_case(st);
}

}  // namespace

// A case with no payment (payment_id NULL) keeps its own provider and reference. The column
// c.payment_id names the row the case is about; for a refund row the view's payment_id is the
// refunded payment and refund_id the refund.
const std::string_view case_select =
    "SELECT c.id, COALESCE(p.refund_of, c.payment_id), c.reason, c.status, c.opened_at, c.resolved_at, c.outcome,"
    " c.vendor_reference, c.note, c.resolved_by, c.evidence, p.tenant_id, p.operation_id,"
    " COALESCE(p.provider, c.provider), c.reference,"
    " CASE WHEN p.refund_of IS NOT NULL THEN c.payment_id END"
    " FROM reconciliation_cases c LEFT JOIN payments p ON p.id = c.payment_id ";

void require_utf8(std::string_view what, std::string_view text) {
  if (const auto bad = invalid_utf8_at(text))
    throw std::invalid_argument(std::string(what) + " is not UTF-8 (byte " + std::to_string(*bad + 1) +
                                "); not stored");
}

void stamp_evidence(boost::json::object& entry, UnixMillis now) {
  if (!entry.contains("source")) throw std::invalid_argument("evidence must name its source");
  // boost::json::serialize writes a string's bytes as they are, so evidence holding bytes that
  // are not UTF-8 would be stored as text parse_evidence refuses.
  require_utf8("evidence", boost::json::serialize(entry));
  if (!entry.contains("at")) entry["at"] = format_rfc3339(now);
}

boost::json::array parse_evidence(const std::string& case_id, const std::string& text) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec || !v.is_array())
    throw std::runtime_error("reconciliation case " + case_id + ": evidence is not a JSON array");
  return std::move(v.as_array());
}

void check_case_text(const ReconciliationCase& c) {
  const std::pair<std::string_view, const std::optional<std::string>*> fields[] = {
      {"payment_id", &c.payment_id},   {"outcome", &c.outcome},         {"vendor_reference", &c.vendor_reference},
      {"note", &c.note},               {"resolved_by", &c.resolved_by}, {"tenant_id", &c.tenant_id},
      {"operation_id", &c.operation_id}, {"reference", &c.reference},   {"refund_id", &c.refund_id}};
  auto refuse = [&](std::string_view field) {
    throw std::runtime_error("reconciliation case " + (valid_utf8(c.id) ? c.id : std::string("(id not UTF-8)")) +
                             ": " + std::string(field) + " is not UTF-8");
  };
  if (!valid_utf8(c.id)) refuse("id");
  if (!valid_utf8(c.reason)) refuse("reason");
  if (!valid_utf8(c.provider)) refuse("provider");
  for (const auto& f : fields)
    if (*f.second && !valid_utf8(**f.second)) refuse(f.first);
}

void report_unreadable_case(CasePage& page, const std::string& case_id, const std::string& detail) {
  log::error("store.case_unreadable", detail + "; left out of the list",
             {{"case_id", valid_utf8(case_id) ? case_id : std::string("(not UTF-8)")}});
  page.unreadable.push_back({case_id, detail});
}

std::string_view to_string(CaseStatus s) { return name_of(status_names, s); }

std::optional<CaseStatus> parse_case_status(std::string_view s) { return value_of(status_names, s); }

std::optional<ReconciliationCase> find_case(Db& db, const std::string& case_id) {
  auto st = db.prepare(std::string(case_select) + "WHERE c.id = ?");
  st.bind(1, case_id);
  return first_case(st);
}

std::optional<ReconciliationCase> lock_case(Db& db, const std::string& case_id) {
  return find_case(db, case_id);
}

std::optional<ReconciliationCase> find_open_case(Db& db, const std::string& payment_id) {
  auto st = db.prepare(std::string(case_select) + "WHERE c.payment_id = ? AND c.status = 'open'");
  st.bind(1, payment_id);
  return first_case(st);
}

std::vector<ReconciliationCase> cases_of_row(Db& db, const std::string& row_id) {
  auto st = db.prepare(std::string(case_select) + "WHERE c.payment_id = ? ORDER BY c.id");
  st.bind(1, row_id);
  std::vector<ReconciliationCase> out;
  while (st.step()) out.push_back(read_case(st));
  return out;
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
  std::string last_id;
  for (int rows = 0; st.step(); ++rows) {
    if (rows == limit) {
      page.next_cursor = last_id;
      break;
    }
    last_id = st.col_text(0);
    try {
      page.cases.push_back(read_case(st));
    } catch (const std::runtime_error& e) {
      report_unreadable_case(page, last_id, e.what());
    }
  }
  return page;
}

bool append_evidence(Db& db, const std::string& case_id, boost::json::object entry,
                     UnixMillis now) {
  stamp_evidence(entry, now);
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

bool append_open_case_evidence(Db& db, const std::string& payment_id, boost::json::object entry,
                               UnixMillis now) {
  auto st = db.prepare("SELECT id FROM reconciliation_cases WHERE payment_id = ? AND status = 'open'");
  st.bind(1, payment_id);
  if (!st.step()) return false;
  const std::string case_id = st.col_text(0);
  st.reset();
  return append_evidence(db, case_id, std::move(entry), now);
}

bool open_case(Db& db, const std::string& payment_id, CaseReason reason, UnixMillis now, Random& rng) {
  db.prepare(
        "INSERT OR IGNORE INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
        " VALUES (?, ?, ?, 'open', ?)")
      .bind(1, new_case_id(now, rng))
      .bind(2, payment_id)
      .bind(3, to_string(reason))
      .bind(4, now)
      .run();
  return db.changes() == 1;
}

void resolve_system_case(Db& db, const std::string& payment_id, PaymentState outcome, UnixMillis now) {
  db.prepare(
        "UPDATE reconciliation_cases SET status = 'resolved', resolved_at = ?1,"
        " resolved_by = 'system', outcome = ?2,"
        " note = 'resolved by a verified vendor callback'"
        " WHERE payment_id = ?3 AND status = 'open' AND reason IN " +
        std::string(system_case_reasons))
      .bind(1, now)
      .bind(2, outcome == PaymentState::succeeded ? "succeeded" : "failed_final")
      .bind(3, payment_id)
      .run();
}

// ---- Vendor reports that need a human ----

Transition mismatch_escalation(PaymentState state) {
  // docs/contract.md §6 names callback_mismatch for any vendor report that disagrees with the stored
  // intent. give_up is the state machine's escalation of a non-terminal payment; a terminal
  // one escalates the same way as a late contradiction (no state change, payment.escalated):
  // the state machine has no trigger for "the vendor's record disagrees on the amount".
  if (is_terminal(state))
    return Transition{state, state, NextAction::none, EventType::escalated,
                      CaseReason::callback_mismatch, false, std::nullopt};
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
    apply_unleased(db, p, escalation, u, now, rng);
    held.event = escalation.event;
    open = find_open_case(db, p.id);
  }
  held.case_id = open->id;
  append_evidence(db, held.case_id, std::move(evidence), now);
  return held;
}

std::string hold_unknown_reference(Db& db, const std::string& provider, const std::string& reference,
                                   boost::json::object evidence, UnixMillis now, Random& rng) {
  require_utf8("the reference of a case", reference);
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

}  // namespace payorch::store
