#pragma once
// The state machine's compare-and-set on PostgreSQL: store::apply_transition's contract
// (store/transitions.h), on a pg::Connection inside the caller's READ COMMITTED transaction,
// where the UPDATE's WHERE (id, state, fence) is re-checked against the latest committed row
// once a concurrent writer of the row has finished. Throws pg::Error.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/state_machine.h"
#include "store/postgres/connection.h"
#include "store/transitions.h"

namespace payorch::store::pg {

struct Applied {
  CasResult result = CasResult::not_found;
  // applied and logged: the action to run once the transaction commits
  // (store/transition_log.h); empty otherwise.
  std::function<void()> announcement;
};

// Not built yet: a transition that opens or resolves a reconciliation case throws
// std::logic_error (cases are not on PostgreSQL yet), before writing anything.
Applied apply_transition(Connection& conn, const std::string& payment_id,
                         std::optional<std::int64_t> fence, const Transition& t,
                         const TransitionUpdate& u, UnixMillis now, Random& rng,
                         const Db::TransitionObserver* observer);

}  // namespace payorch::store::pg
