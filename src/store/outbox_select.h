#pragma once
// The SELECT of whole outbox rows (alias o) followed by `rest` (WHERE, ORDER BY, LIMIT): portable
// SQL, shared by both drivers' event decoders, which read the columns in its order (seq,
// event_id, tenant_id, payment_id, type, payload, created_at, delivered_at, attempts,
// next_attempt_at, last_error).
#include <string>
#include <string_view>

namespace payorch::store {

std::string select_events(std::string_view rest);

}  // namespace payorch::store
