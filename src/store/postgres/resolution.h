#pragma once
// An operator's resolution of a reconciliation case on PostgreSQL: store::resolve_case's contract
// (store/resolution.h), in the caller's READ COMMITTED transaction. Throws pg::Error; a
// resolution the rules refuse is a returned value, and a refusal has written nothing.
//
// Two operators (or an operator and an import) may resolve one case at once, on any node. The
// payment's row lock, then the case's, are taken before the case's status is read, so the
// second resolution reads the first one's committed result and is refused (case_not_open):
// exactly one wins.
#include "core/clock.h"
#include "core/decide.h"
#include "store/postgres/transitions.h"
#include "store/resolution.h"

namespace payorch::store::pg {

ResolveResult resolve_case(const WriteTx& w, const std::string& case_id, const Resolution& resolution,
                           const Contract& contract, UnixMillis now, Random& rng);

}  // namespace payorch::store::pg
