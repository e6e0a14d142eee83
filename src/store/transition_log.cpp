#include "store/transition_log.h"

#include <vector>

#include "core/ids.h"
#include "core/refund_state.h"
#include "util/log.h"

namespace payorch::store {

std::function<void()> transition_announcement(const Transition& t, bool escalated_too,
                                              std::string payment_id, std::string client_key,
                                              std::int64_t fence,
                                              const Db::TransitionObserver* observer) {
  return [t, escalated_too, id = std::move(payment_id), key = std::move(client_key), fence, observer] {
    // A refund row (docs/refunds.md) is logged as a refund; the observer counts payments.
    const bool refund = id.starts_with(refund_id_prefix);
    const auto event_name = [refund](EventType e) { return refund ? refund_event_type(e) : to_string(e); };
    if (!refund && t.changes_state() && observer && *observer) (*observer)(t.from, t.to);
    std::vector<log::Field> fields{{refund ? "refund_id" : "payment_id", id},
                                   {"client_key", key},
                                   {"fence", fence},
                                   {"from", to_string(t.from)},
                                   {"to", to_string(t.to)}};
    if (t.event) fields.emplace_back("outbox_event", event_name(*t.event));
    if (escalated_too) fields.emplace_back("also_event", event_name(EventType::escalated));
    if (t.open_case) fields.emplace_back("case_reason", to_string(*t.open_case));
    const char* what = t.changes_state() ? (refund ? "refund.state_changed" : "payment.state_changed")
                                         : (refund ? "refund.escalated" : "payment.escalated");
    // A case opened or an escalation hands the payment to a human: alert, not info.
    const bool to_human = t.open_case || escalated_too || !t.changes_state();
    log::write(to_human ? log::Level::alert : log::Level::info, what, "", fields);
  };
}

}  // namespace payorch::store
