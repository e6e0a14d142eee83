#pragma once
// Reconciliation cases on PostgreSQL: the same contracts as store/cases.h, on a pg::Connection
// inside the caller's READ COMMITTED transaction. They throw pg::Error.
//
// Several transactions may work on one payment's cases at once (a callback, an operator, an
// import, the engine's escalation), possibly on several nodes. Each writer that decides from
// what it read takes the payment's row lock first (lock_payment, store/postgres/transitions.h;
// the engine's fenced UPDATE takes the same lock), then the case's: so "has it an open case?"
// cannot change between the question and the write, and two escalations of one payment open
// one case and write one payment.escalated. The unique indexes (one open case per payment, one
// per unknown reference) stay the last word.
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/cases.h"
#include "store/postgres/connection.h"
#include "store/postgres/transitions.h"

namespace payorch::store::pg {

std::optional<ReconciliationCase> find_case(Connection& conn, const std::string& case_id);
std::optional<ReconciliationCase> find_open_case(Connection& conn, const std::string& payment_id);
std::vector<ReconciliationCase> cases_of_row(Connection& conn, const std::string& row_id);
CasePage list_cases(Connection& conn, std::optional<CaseStatus> status, int limit,
                    const std::optional<std::string>& cursor);

// As store::append_evidence. The case's row is locked (FOR UPDATE) while its evidence is read,
// extended and written back, so concurrent appends each keep the other's entry.
bool append_evidence(Connection& conn, const std::string& case_id, boost::json::object entry,
                     UnixMillis now);
// As store::append_open_case_evidence: the open case is found and locked in one statement; a
// case resolved meanwhile is no longer open (false, nothing written).
bool append_open_case_evidence(Connection& conn, const std::string& payment_id,
                               boost::json::object entry, UnixMillis now);

// As store::open_case: INSERT ... ON CONFLICT on the one-open-case-per-payment index.
bool open_case(Connection& conn, const std::string& payment_id, CaseReason reason, UnixMillis now,
               Random& rng);
// As store::resolve_system_case.
void resolve_system_case(Connection& conn, const std::string& payment_id, PaymentState outcome,
                         UnixMillis now);

// As store::hold_with_evidence; the payment is locked (lock_payment) before its open case is
// looked for.
Held hold_with_evidence(const WriteTx& w, const Payment& p, const Transition& escalation,
                        boost::json::object evidence, UnixMillis now, Random& rng);

// As store::hold_unknown_reference: one INSERT ... ON CONFLICT DO UPDATE ... RETURNING on the
// one-open-case-per-reference index, so reports about one reference at once share one case.
std::string hold_unknown_reference(Connection& conn, const std::string& provider,
                                   const std::string& reference, boost::json::object evidence,
                                   UnixMillis now, Random& rng);

}  // namespace payorch::store::pg
