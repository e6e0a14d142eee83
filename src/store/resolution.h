#pragma once
// An operator's resolution of a reconciliation case (docs/contract.md §6: POST
// /v1/reconciliation/{case_id}/resolve), in the caller's transaction (the Writer's). It throws
// SqliteError on storage failures; a resolution the rules refuse is a returned value, never an
// exception, and a refusal has written nothing.
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/clock.h"
#include "core/decide.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/cases.h"
#include "store/sqlite.h"

namespace payorch::store {

enum class ResolutionOutcome { succeeded, failed_final, retry };
std::string_view to_string(ResolutionOutcome o);  // "succeeded", "failed_final", "retry"
std::optional<ResolutionOutcome> parse_resolution_outcome(std::string_view s);

struct Resolution {
  ResolutionOutcome outcome = ResolutionOutcome::succeeded;
  std::optional<std::string> vendor_reference;
  std::string note;  // why; required and non-empty (the caller validates)
  std::string by;    // who: the operator whose admin token asked ("admin" for admin.token)
  std::optional<boost::json::object> evidence;  // appended to the case's evidence
  std::optional<std::string> request_id;         // the operator's request, if any
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
//    with a fresh budget from `now` (and an earlier operator's stop request withdrawn); refused for a terminal payment and once the key may no
//    longer be retained by the vendor (first_submit_at + 0.9 × key_retention must still be
//    after now + request_timeout + lease, the engine's own test) — a retry after the vendor
//    forgot the key could charge twice.
//  - failed_final under a contract with a confirmed close (wechatpay, alipay), for a payment
//    not terminal whose key may have reached the vendor: the case closes and the payment
//    keeps its state, fenced (+1) and marked stop_requested_at; automatic work then closes the
//    order, asks once more, and records FAILED_FINAL only when the vendor shows it closed and
//    unpaid — otherwise a new case opens with the vendor's answers (core/decide.h).
//  - vendor_reference, when given, is stored on the case, and on the payment whenever the
//    resolution writes the payment row.
//  - a case with no payment: succeeded / failed_final close it with the operator's note (no
//    payment to change, no event); retry is refused.
// `contract` is the contract of the payment's provider (retry and failed_final read it; a
// default Contract, for a provider no longer configured, has no confirmed close).
ResolveResult resolve_case(Db& db, const std::string& case_id, const Resolution& resolution,
                           const Contract& contract, UnixMillis now, Random& rng);

// What the resolution flow (store/resolution_flow.h) writes on SQLite, in the Writer's
// transaction. close_case resolves the open case as `resolution` says and appends its evidence;
// it throws std::runtime_error when the case was no longer open. start_fresh_budget makes retry's
// budget (max_attempts, give_up_after) count from `now`; clear_failure drops the payment's
// failure_code and failure_message.
void close_case(Db& db, const ReconciliationCase& rc, const Resolution& resolution, UnixMillis now);
void start_fresh_budget(Db& db, const std::string& payment_id, UnixMillis now);
// An operator's failed_final on a provider that closes orders: automatic work stops the
// payment at the vendor (stop_requested_at, core/decide.h plan()).
void request_stop(Db& db, const std::string& payment_id, UnixMillis now);
void clear_failure(Db& db, const std::string& payment_id);

// Why `retry` may not resolve the open case `c`, or nullopt when it may: the one home of the
// rule, read by resolve_case on both drivers and by the admin API (the case view's
// `retry_refused`, and resolve's answer when the provider is no longer configured). A retry
// needs the row the case is about (`row`, null when there is none), its provider still
// configured (`contract`, null when not), a row that is not terminal, and a key the vendor still
// retains for the whole of a resubmit (the engine's own test, resubmit_outlives_key).
std::optional<std::string> retry_refusal(const ReconciliationCase& c, const Payment* row,
                                         const Contract* contract, UnixMillis now);

}  // namespace payorch::store
