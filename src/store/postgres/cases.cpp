#include "store/postgres/cases.h"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <stdexcept>

#include "core/ids.h"

namespace payorch::store::pg {
namespace {

// Row `row` of a case_select result, in its column order.
ReconciliationCase read_case(const Result& r, int row) {
  ReconciliationCase c;
  int i = 0;
  c.id = r.text(row, i++);
  c.payment_id = r.opt_text(row, i++);
  c.reason = r.text(row, i++);
  const std::string status = r.text(row, i++);
  const auto parsed = parse_case_status(status);
  if (!parsed) throw Error(ErrorKind::other, "", "", "reconciliation case " + c.id + ": bad status " + status);
  c.status = *parsed;
  c.opened_at = r.integer(row, i++);
  c.resolved_at = r.opt_integer(row, i++);
  c.outcome = r.opt_text(row, i++);
  c.vendor_reference = r.opt_text(row, i++);
  c.note = r.opt_text(row, i++);
  c.resolved_by = r.opt_text(row, i++);
  c.evidence = parse_evidence(c.id, r.text(row, i++));
  c.tenant_id = r.opt_text(row, i++);
  c.operation_id = r.opt_text(row, i++);
  c.provider = r.text(row, i++);
  c.reference = r.opt_text(row, i++);
  c.refund_id = r.opt_text(row, i++);
  check_case_text(c);
  return c;
}

std::optional<ReconciliationCase> first_case(const Result& r) {
  if (r.rows() == 0) return std::nullopt;
  return read_case(r, 0);
}

}  // namespace

std::optional<ReconciliationCase> find_case(Connection& conn, const std::string& case_id) {
  return first_case(conn.exec(std::string(case_select) + "WHERE c.id = $1", {case_id}));
}

std::optional<ReconciliationCase> find_open_case(Connection& conn, const std::string& payment_id) {
  return first_case(conn.exec(std::string(case_select) + "WHERE c.payment_id = $1 AND c.status = 'open'",
                              {payment_id}));
}

std::vector<ReconciliationCase> cases_of_row(Connection& conn, const std::string& row_id) {
  const Result r = conn.exec(std::string(case_select) + "WHERE c.payment_id = $1 ORDER BY c.id", {row_id});
  std::vector<ReconciliationCase> out;
  for (int row = 0; row < r.rows(); ++row) out.push_back(read_case(r, row));
  return out;
}

CasePage list_cases(Connection& conn, std::optional<CaseStatus> status, int limit,
                    const std::optional<std::string>& cursor) {
  // One more than the page, so next_cursor is null exactly when nothing follows.
  std::optional<std::string> status_name;
  if (status) status_name = std::string(to_string(*status));
  const Result r = conn.exec(std::string(case_select) +
                                 "WHERE ($1::text IS NULL OR c.status = $1)"
                                 " AND ($2::text IS NULL OR c.id < $2) ORDER BY c.id DESC LIMIT $3",
                             {status_name, cursor, limit + 1});
  CasePage page;
  for (int row = 0; row < r.rows(); ++row) {
    if (row == limit) {
      page.next_cursor = r.text(row - 1, 0);
      break;
    }
    try {
      page.cases.push_back(read_case(r, row));
    } catch (const std::runtime_error& e) {
      report_unreadable_case(page, r.text(row, 0), e.what());
    }
  }
  return page;
}

bool append_evidence(Connection& conn, const std::string& case_id, boost::json::object entry,
                     UnixMillis now) {
  stamp_evidence(entry, now);
  const Result r = conn.exec("SELECT evidence FROM reconciliation_cases WHERE id = $1 FOR UPDATE",
                             {case_id});
  if (r.rows() == 0) return false;
  boost::json::array evidence = parse_evidence(case_id, r.text(0, 0));
  evidence.push_back(std::move(entry));
  conn.exec("UPDATE reconciliation_cases SET evidence = $1 WHERE id = $2",
            {boost::json::serialize(evidence), case_id});
  return true;
}

bool append_open_case_evidence(Connection& conn, const std::string& payment_id,
                               boost::json::object entry, UnixMillis now) {
  const Result r = conn.exec(
      "SELECT id FROM reconciliation_cases WHERE payment_id = $1 AND status = 'open' FOR UPDATE",
      {payment_id});
  if (r.rows() == 0) return false;
  return append_evidence(conn, r.text(0, 0), std::move(entry), now);
}

bool open_case(Connection& conn, const std::string& payment_id, CaseReason reason, UnixMillis now,
               Random& rng) {
  return conn.exec(
             "INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at)"
             " VALUES ($1, $2, $3, 'open', $4)"
             " ON CONFLICT (payment_id) WHERE status = 'open' DO NOTHING",
             {new_case_id(now, rng), payment_id, to_string(reason), now})
             .affected() == 1;
}

void resolve_system_case(Connection& conn, const std::string& payment_id, PaymentState outcome,
                         UnixMillis now) {
  conn.exec(
      "UPDATE reconciliation_cases SET status = 'resolved', resolved_at = $1,"
      " resolved_by = 'system', outcome = $2,"
      " note = 'resolved by a verified vendor callback'"
      " WHERE payment_id = $3 AND status = 'open' AND reason IN " +
          std::string(system_case_reasons),
      {now, outcome == PaymentState::succeeded ? "succeeded" : "failed_final", payment_id});
}

Held hold_with_evidence(const WriteTx& w, const Payment& p, const Transition& escalation,
                        boost::json::object evidence, UnixMillis now, Random& rng) {
  if (!escalation.open_case) throw std::logic_error("hold_with_evidence: the transition opens no case");
  // Locked before the question: two reports about one payment at once must not both find no
  // case and both escalate (one case, but two payment.escalated).
  if (!lock_payment(w.conn, p.id))
    throw std::runtime_error("hold_with_evidence: no payment " + p.id);
  Held held;
  auto open = find_open_case(w.conn, p.id);
  if (!open) {
    TransitionUpdate u;
    u.next_attempt_at = now;
    apply_unleased(w, p, escalation, u, now, rng);
    held.event = escalation.event;
    open = find_open_case(w.conn, p.id);
  }
  held.case_id = open->id;
  append_evidence(w.conn, held.case_id, std::move(evidence), now);
  return held;
}

std::string hold_unknown_reference(Connection& conn, const std::string& provider,
                                   const std::string& reference, boost::json::object evidence,
                                   UnixMillis now, Random& rng) {
  require_utf8("the reference of a case", reference);
  // A concurrent insert of the same reference makes this wait for that transaction; once it has
  // committed, the conflict is with its row, which DO UPDATE locks and RETURNING names.
  const Result r = conn.exec(
      "INSERT INTO reconciliation_cases (id, payment_id, reason, status, opened_at, provider,"
      " reference) VALUES ($1, NULL, $2, 'open', $3, $4, $5)"
      " ON CONFLICT (provider, reference) WHERE status = 'open' AND payment_id IS NULL"
      " DO UPDATE SET id = reconciliation_cases.id RETURNING id",
      {new_case_id(now, rng), to_string(CaseReason::callback_mismatch), now, provider, reference});
  std::string case_id = r.text(0, 0);
  append_evidence(conn, case_id, std::move(evidence), now);
  return case_id;
}

}  // namespace payorch::store::pg
