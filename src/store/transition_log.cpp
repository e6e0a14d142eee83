#include "store/transition_log.h"

#include <vector>

#include "util/log.h"

namespace payorch::store {

std::function<void()> transition_announcement(const Transition& t, bool escalated_too,
                                              std::string payment_id, std::string client_key,
                                              std::int64_t fence,
                                              const Db::TransitionObserver* observer) {
  return [t, escalated_too, id = std::move(payment_id), key = std::move(client_key), fence, observer] {
    if (t.changes_state() && observer && *observer) (*observer)(t.from, t.to);
    std::vector<log::Field> fields{{"payment_id", id},
                                   {"client_key", key},
                                   {"fence", fence},
                                   {"from", to_string(t.from)},
                                   {"to", to_string(t.to)}};
    if (t.event) fields.emplace_back("outbox_event", to_string(*t.event));
    if (escalated_too) fields.emplace_back("also_event", to_string(EventType::escalated));
    if (t.open_case) fields.emplace_back("case_reason", to_string(*t.open_case));
    log::write(log::Level::info, t.changes_state() ? "payment.state_changed" : "payment.escalated", "",
               fields);
  };
}

}  // namespace payorch::store
