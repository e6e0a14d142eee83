#pragma once
// Reconciliation cases (docs/contract.md §3, §6): the payments in front of a human. Reading and listing
// cases, opening them, closing the system's own, and their evidence — append_evidence is the
// only writer of a case's evidence. Like store/payments.h, every function runs on the
// connection it is given inside the caller's transaction (writes: the Writer's) and throws
// SqliteError on storage failures.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/sqlite.h"

namespace payorch::store {

enum class CaseStatus { open, resolved };
std::string_view to_string(CaseStatus s);  // "open", "resolved"
std::optional<CaseStatus> parse_case_status(std::string_view s);

struct ReconciliationCase {
  std::string id;  // rc_<ULID>
  // Nullopt for a case about a charge no payment matched (a callback naming an unknown
  // client_key); then `reference` holds the client_key the vendor named. For a case about a
  // refund, the refunded payment (the refund's refund_of).
  std::optional<std::string> payment_id;
  // Set for a case about a refund: the refund's id, the row the case is about (docs/refunds.md).
  std::optional<std::string> refund_id;
  std::string reason;
  CaseStatus status = CaseStatus::open;
  UnixMillis opened_at = 0;
  // Set together when the case is resolved.
  std::optional<UnixMillis> resolved_at;
  std::optional<std::string> outcome;  // "succeeded" | "failed_final" | "retry"
  std::optional<std::string> vendor_reference;
  std::optional<std::string> note;
  std::optional<std::string> resolved_by;
  boost::json::array evidence;  // objects, oldest first, each with "at" and "source"
  // Of the row the case is about, payment or refund (nullopt without one).
  std::optional<std::string> tenant_id;
  std::optional<std::string> operation_id;
  std::string provider;  // the payment's, or the one the vendor's report came from
  std::optional<std::string> reference;  // set only on a case with no payment
};

std::optional<ReconciliationCase> find_case(Db& db, const std::string& case_id);
// The payment's open case; there is at most one (unique index).
std::optional<ReconciliationCase> find_open_case(Db& db, const std::string& payment_id);
// The case, to be decided about in the Writer's transaction (the shared flows' lock_case,
// store/resolution_flow.h): find_case, since that transaction already excludes every other
// writer until it ends.
std::optional<ReconciliationCase> lock_case(Db& db, const std::string& case_id);

// The payments row a case is about: the refund for a refund case, else the payment; nullopt
// for a case no payment matched.
inline const std::optional<std::string>& case_row_id(const ReconciliationCase& c) {
  return c.refund_id ? c.refund_id : c.payment_id;
}

// Every case about the row `row_id` (a payment's, or a refund's id), oldest first.
std::vector<ReconciliationCase> cases_of_row(Db& db, const std::string& row_id);

// A case row that cannot be read back (evidence that is not a JSON array, text that is not
// UTF-8, an unknown status): its id and why.
struct UnreadableCase {
  std::string id;
  std::string detail;
};

struct CasePage {
  std::vector<ReconciliationCase> cases;
  std::optional<std::string> next_cursor;  // the last id of this page when more may follow
  // The page's rows that could not be read, each logged (store.case_unreadable) and left out
  // of `cases`; the rest of the page is served.
  std::vector<UnreadableCase> unreadable;
};

// Cases newest first (ids are ULIDs of opened_at), optionally of one status. `cursor` is the
// id of the last case already seen. A row that cannot be read goes to `unreadable`; it still
// counts towards `limit` and moves the cursor, so paging goes past it.
CasePage list_cases(Db& db, std::optional<CaseStatus> status, int limit,
                    const std::optional<std::string>& cursor);

// Appends `entry` to the case's evidence. `entry` must name its "source"; "at" (RFC 3339) is
// set to `now` unless present. Returns false when there is no such case. Evidence is added to
// resolved cases too: it is a record, not a decision.
bool append_evidence(Db& db, const std::string& case_id, boost::json::object entry,
                     UnixMillis now);

// Appends `entry` (as append_evidence) to the evidence of the payment's open case. Returns
// false when the payment has no open case; then nothing is written.
bool append_open_case_evidence(Db& db, const std::string& payment_id, boost::json::object entry,
                               UnixMillis now);

// Opens a case for the payment with `reason`, unless one is open already (at most one per
// payment, a unique index). Returns whether this opened it.
bool open_case(Db& db, const std::string& payment_id, CaseReason reason, UnixMillis now, Random& rng);

// Closes the payment's open case if the system opened it for its own reasons
// (retry_budget_exhausted, unrecoverable_contract, key_retention_expiring), now that a verified
// vendor answer made the payment `outcome` (succeeded or failed_final); resolved_by 'system'.
void resolve_system_case(Db& db, const std::string& payment_id, PaymentState outcome, UnixMillis now);

// ---- Vendor reports that need a human (callbacks, settlement rows) ----

// The escalation for a vendor report whose amount or currency differ from the intent: a
// callback_mismatch case and payment.escalated. A non-terminal payment escalates as the state
// machine's give_up (automatic work on it stops); a terminal one keeps its state.
Transition mismatch_escalation(PaymentState state);

struct Held {
  std::string case_id;             // the case that got the evidence
  std::optional<EventType> event;  // payment.escalated when a case was opened
};

// Puts `evidence` in front of a human: appended to the payment's open case or, when it has
// none, to the case `escalation` opens (a transition with open_case, applied by
// compare-and-set on the state alone, its event written). A payment has at most one open case,
// so a second report adds evidence and never a second payment.escalated.
Held hold_with_evidence(Db& db, const Payment& p, const Transition& escalation,
                        boost::json::object evidence, UnixMillis now, Random& rng);

// Opens a callback_mismatch case with no payment: `provider`'s report about `reference`, a
// client_key none of its payments has. An open case about the same reference gets `evidence`
// instead (at most one is open per reference). No outbox event: there is no payment and no
// tenant to tell. Returns the case id.
std::string hold_unknown_reference(Db& db, const std::string& provider, const std::string& reference,
                                   boost::json::object evidence, UnixMillis now, Random& rng);

// Shared by both drivers. The SELECT of a case and what it shows of its payment, to which a
// WHERE clause is appended: a case with no payment keeps its own provider and reference; a case
// about a refund row reads as the refunded payment's, with refund_id the refund's (last column).
extern const std::string_view case_select;
// The reasons of the cases the system opened for itself, which a verified final callback
// resolves (resolve_system_case), as an SQL list.
inline constexpr std::string_view system_case_reasons =
    "('retry_budget_exhausted','unrecoverable_contract','key_retention_expiring')";
// An evidence entry as it is appended: it must name its source and be UTF-8 throughout, as
// parse_evidence reads it back (std::invalid_argument otherwise), and it gets "at" = `now`
// unless it has one.
void stamp_evidence(boost::json::object& entry, UnixMillis now);
// Text a case keeps (a reference, evidence) must be UTF-8, or no answer could show the case:
// throws std::invalid_argument naming `what` otherwise.
void require_utf8(std::string_view what, std::string_view text);
// A case's stored evidence (a JSON array); throws std::runtime_error naming the case otherwise.
boost::json::array parse_evidence(const std::string& case_id, const std::string& text);
// Throws std::runtime_error naming the case and the field when any text of a case as read is
// not UTF-8: no JSON answer could carry it.
void check_case_text(const ReconciliationCase& c);
// Records a row of a page that could not be read (`page.unreadable`) and logs it.
void report_unreadable_case(CasePage& page, const std::string& case_id, const std::string& detail);

}  // namespace payorch::store
