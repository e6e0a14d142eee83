#pragma once
// What apply_transition does once its transaction has committed, on either driver: logs the
// decision (payment.state_changed or payment.escalated) and tells the observer of a state change.
// A rolled-back decision never happened, so this runs as an after-commit action only.
#include <cstdint>
#include <functional>
#include <string>

#include "core/state_machine.h"
#include "store/sqlite.h"

namespace payorch::store {

// The after-commit action of an applied transition `t` of payment `payment_id` (its client_key
// and its fence after the change); `escalated_too`: a payment.escalated event followed the
// state's own. `observer` may be null or empty; it must outlive the action.
std::function<void()> transition_announcement(const Transition& t, bool escalated_too,
                                              std::string payment_id, std::string client_key,
                                              std::int64_t fence,
                                              const Db::TransitionObserver* observer);

}  // namespace payorch::store
