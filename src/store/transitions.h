#pragma once
// The state machine's compare-and-set (docs/contract.md §3): a transition of core/state_machine.h applied
// to the payment row, conditional on its state and, for a lease holder, its fence — with the
// outbox event and the case the transition calls for, in the caller's transaction.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/payment.h"
#include "core/state_machine.h"
#include "store/sqlite.h"
#include "util/metrics.h"

namespace payorch::store {

enum class CasResult {
  applied,          // the row changed and its outbox event was written
  already_in_state, // nothing to do: the payment is already where the transition leads
  stale_fence,      // a newer lease holder owns it: this writer's decision is discarded
  illegal,          // the payment is in another state: the transition is refused and logged
  not_found,
};
std::string_view to_string(CasResult r);

struct TransitionUpdate {
  NextAction next_action = NextAction::none;
  UnixMillis next_attempt_at = 0;
  bool release_lease = true;
  std::optional<std::string> vendor_reference;
  std::optional<std::string> failure_code;
  std::optional<std::string> failure_message;
  std::optional<UnixMillis> last_submit_ended_at;  // set when the call was a submit
  std::optional<UnixMillis> vendor_closed_at;      // set when the vendor accepted a close
  // The request that made the transition (a callback's, an operator's), kept with its outbox
  // events; nullopt for the engine's own.
  std::optional<std::string> request_id;
};

// Applies `t` to the payment as a compare-and-set on (id, state = t.from, fence), writing its
// outbox event (and opening a case, if the transition says so) in the caller's transaction.
// `fence` is the lease's fence; nullopt for writers that do not hold a lease (callbacks,
// operators), which compare on state alone and advance the fence, so that a worker whose call
// was in flight meanwhile can no longer write (its answer is stale_fence).
CasResult apply_transition(Db& db, const std::string& payment_id, std::optional<std::int64_t> fence,
                           const Transition& t, const TransitionUpdate& u, UnixMillis now,
                           Random& rng);

// Applies `t` to `p` without a lease (compare-and-set on state alone), for writers that read
// the payment in this same transaction: anything but `applied` means the database is not what
// the caller believes, so it throws std::runtime_error and the caller's transaction rolls
// everything back.
void apply_unleased(Db& db, const Payment& p, const Transition& t, const TransitionUpdate& u,
                    UnixMillis now, Random& rng);

// Told about every state change apply_transition made (from != to), once its transaction has
// committed — never about one that rolled back: the connection's observer (Db::set_transition_observer).
using TransitionObserver = Db::TransitionObserver;
// An observer that counts `payorch_transitions_total{from,to}` in `metrics` (declared here),
// which must outlive every connection it is set on.
TransitionObserver transition_counter(Metrics& metrics);

}  // namespace payorch::store
