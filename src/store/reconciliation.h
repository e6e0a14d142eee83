#pragma once
// Reconciliation cases (docs/contract.md §3, §6): the payments in front of a human. Reading and listing
// cases, appending evidence, an operator's resolution, and the import of a vendor settlement
// file. Like store/payments.h, every function runs on the connection it is given inside the
// caller's transaction (writes: the Writer's) and throws SqliteError on storage failures; a
// request the rules refuse is a returned value, never an exception, and a refusal has written
// nothing.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/clock.h"
#include "core/decide.h"
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
  // client_key); then `reference` holds the client_key the vendor named.
  std::optional<std::string> payment_id;
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
  // Of the payment the case is about (nullopt without one).
  std::optional<std::string> tenant_id;
  std::optional<std::string> operation_id;
  std::string provider;  // the payment's, or the one the vendor's report came from
  std::optional<std::string> reference;  // set only on a case with no payment
};

std::optional<ReconciliationCase> find_case(Db& db, const std::string& case_id);
// The payment's open case; there is at most one (unique index).
std::optional<ReconciliationCase> find_open_case(Db& db, const std::string& payment_id);

struct CasePage {
  std::vector<ReconciliationCase> cases;
  std::optional<std::string> next_cursor;  // the last id of this page when more may follow
};

// Cases newest first (ids are ULIDs of opened_at), optionally of one status. `cursor` is the
// id of the last case already seen.
CasePage list_cases(Db& db, std::optional<CaseStatus> status, int limit,
                    const std::optional<std::string>& cursor);

// Appends `entry` to the case's evidence. `entry` must name its "source"; "at" (RFC 3339) is
// set to `now` unless present. Returns false when there is no such case. Evidence is added to
// resolved cases too: it is a record, not a decision.
bool append_evidence(Db& db, const std::string& case_id, boost::json::object entry,
                     UnixMillis now);

// ---- Vendor reports that need a human (callbacks, settlement rows) ----

// The payment of `provider` with that client_key: what a vendor's report names.
std::optional<Payment> find_payment_by_client_key(Db& db, const std::string& provider,
                                                  const std::string& client_key);

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

// ---- Resolution (docs/contract.md §6: POST /v1/reconciliation/{case_id}/resolve) ----

enum class ResolutionOutcome { succeeded, failed_final, retry };
std::string_view to_string(ResolutionOutcome o);  // "succeeded", "failed_final", "retry"
std::optional<ResolutionOutcome> parse_resolution_outcome(std::string_view s);

struct Resolution {
  ResolutionOutcome outcome = ResolutionOutcome::succeeded;
  std::optional<std::string> vendor_reference;
  std::string note;  // why; required and non-empty (the caller validates)
  std::string by;    // who: an operator's name, "admin", "settlement-import"
  std::optional<boost::json::object> evidence;  // appended to the case's evidence
};

struct ResolveRefusal {
  enum class Code {
    case_not_found,
    case_not_open,      // already resolved: a second resolution is refused, not merged
    retry_not_allowed,  // terminal payment, no payment, or the vendor may have forgotten the key
  };
  Code code;
  std::string detail;  // for the operator
};

struct Resolved {
  ReconciliationCase resolved_case;
  std::optional<Payment> payment;   // as it is after the resolution; nullopt for a case with
                                    // no payment
  std::optional<EventType> event;   // the outbox event written, if the state changed
};

using ResolveResult = std::variant<Resolved, ResolveRefusal>;

// Resolves an open case, in the caller's transaction:
//  - succeeded / failed_final: Trigger::resolve_* by compare-and-set on the payment's state
//    alone (operators hold no lease), with its outbox event — payment.succeeded / failed, or
//    payment.corrected when it changes a terminal state (invariant 4: the only way one
//    changes). A payment already in that state (e.g. a late_contradiction judged in favour of
//    the state it has) is left untouched: no write, no event; the case is closed.
//  - retry: Trigger::resolve_retry (PROCESSING → submit, UNKNOWN → query, same client_key)
//    with a fresh budget from `now`; refused for a terminal payment and once the key may no
//    longer be retained by the vendor (first_submit_at + 0.9 × key_retention must still be
//    after now + request_timeout + lease, the engine's own test) — a retry after the vendor
//    forgot the key could charge twice.
//  - vendor_reference, when given, is stored on the case, and on the payment whenever the
//    resolution writes the payment row.
//  - a case with no payment: succeeded / failed_final close it with the operator's note (no
//    payment to change, no event); retry is refused.
// `contract` is the contract of the payment's provider (only retry reads it).
ResolveResult resolve_case(Db& db, const std::string& case_id, const Resolution& resolution,
                           const Contract& contract, UnixMillis now, Random& rng);

// ---- Settlement import (docs/contract.md §6: POST /v1/reconciliation/import) ----

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
