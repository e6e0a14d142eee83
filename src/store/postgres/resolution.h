#pragma once
// An operator's resolution of a reconciliation case on PostgreSQL: store::resolve_case's contract
// (store/resolution.h), in the caller's READ COMMITTED transaction. Throws pg::Error; a
// resolution the rules refuse is a returned value, and a refusal has written nothing.
//
// Two operators (or an operator and an import) may resolve one case at once, on any node. The
// payment's row lock, then the case's, are taken before the case's status is read, so the
// second resolution reads the first one's committed result and is refused (case_not_open):
// exactly one wins.
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/decide.h"
#include "store/postgres/transitions.h"
#include "store/resolution.h"

namespace payorch::store::pg {

// What the resolution flow (store/resolution_flow.h) calls on PostgreSQL, as its SQLite
// overloads in store/resolution.h do. lock_case takes the payment's row lock first when the case
// has a payment (the order every writer of a payment's cases takes), then the case's, and reads
// the case again after them, so its status is the latest committed one.
std::optional<ReconciliationCase> lock_case(const WriteTx& w, const std::string& case_id);
void close_case(const WriteTx& w, const ReconciliationCase& rc, const Resolution& resolution,
                UnixMillis now);
void start_fresh_budget(const WriteTx& w, const std::string& payment_id, UnixMillis now);
void request_stop(const WriteTx& w, const std::string& payment_id, UnixMillis now);
void clear_failure(const WriteTx& w, const std::string& payment_id);

ResolveResult resolve_case(const WriteTx& w, const std::string& case_id, const Resolution& resolution,
                           const Contract& contract, UnixMillis now, Random& rng);

}  // namespace payorch::store::pg
