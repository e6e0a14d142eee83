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
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/postgres/connection.h"
#include "store/store.h"
#include "store/transitions.h"

namespace payorch::store::pg {

struct Applied {
  CasResult result = CasResult::not_found;
  // applied and logged: the action to run once the transaction commits
  // (store/transition_log.h); empty otherwise.
  std::function<void()> announcement;
};

// Applies `t` as store::apply_transition does, in the caller's transaction: the fenced UPDATE,
// then the case the transition opens (at most one open per payment) or the system case it
// resolves, and its outbox events (payment.escalated after the state's own event when a case
// opened on the way to another state).
Applied apply_transition(Connection& conn, const std::string& payment_id,
                         std::optional<std::int64_t> fence, const Transition& t,
                         const TransitionUpdate& u, UnixMillis now, Random& rng,
                         const Db::TransitionObserver* observer);

// The write transaction as the operations that apply transitions on their own account
// (callbacks, cases, resolutions, settlement imports) see it: its connection, its Tx (whose
// after_commit runs the announcements of what they applied) and the observer of committed state
// changes (may be null).
struct WriteTx {
  Connection& conn;
  Tx& tx;
  const Db::TransitionObserver* observer = nullptr;
};

// store::apply_unleased on PostgreSQL: `t` applied to `p` by compare-and-set on state alone, for
// writers that read (and locked, lock_payment) the payment in this transaction; anything but
// `applied` throws std::runtime_error and the whole transaction rolls back.
void apply_unleased(const WriteTx& w, const Payment& p, const Transition& t,
                    const TransitionUpdate& u, UnixMillis now, Random& rng);

// The payment `payment_id`, read after taking its row lock (SELECT ... FOR UPDATE): it cannot
// change under this transaction until it ends, and it is the latest committed row (READ
// COMMITTED reads it again once a concurrent writer has committed). Every writer that decides
// about a payment and its cases from what it read takes this lock first (payment, then case:
// one order, no deadlock between them); the engine's fenced UPDATE takes the same row lock.
std::optional<Payment> lock_payment(Connection& conn, const std::string& payment_id);
// The payment of `provider` with that client_key (store::find_payment_by_client_key), locked.
std::optional<Payment> lock_payment_by_client_key(Connection& conn, const std::string& provider,
                                                  const std::string& client_key);

}  // namespace payorch::store::pg
