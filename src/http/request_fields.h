#pragma once
// The pure parts of reading a tenant request (SPEC §2): request headers and query strings.
// No I/O; Api calls these before it touches storage.
#include <boost/url/params_view.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/intent.h"
#include "core/payment.h"

namespace payorch::http {

inline constexpr int max_wait_s = 30;

// `Prefer: wait=N` (RFC 7240) in seconds, capped at max_wait_s; 0 when absent or malformed.
// The name is case-insensitive, N a number or a quoted number, among other preferences and
// their parameters; the first `wait` counts. The second form reads every Prefer line of a
// request as one list, which is what several lines mean (RFC 9110 §5.3).
int preferred_wait(std::string_view prefer);
int preferred_wait(const std::vector<std::string_view>& prefer_lines);

// Whether a Content-Type names application/json (any case, parameters ignored).
bool json_content_type(std::string_view content_type);

// GET /v1/payments?state=&limit=&cursor=. `errors` lists every bad parameter (422).
struct PaymentsQuery {
  std::optional<PaymentState> state;
  int limit = 50;  // 1..200
  std::optional<std::string> cursor;
  std::vector<FieldError> errors;
};
PaymentsQuery parse_payments_query(boost::urls::params_view query);

// GET /v1/events?after=&limit=. `errors` lists every bad parameter (422).
struct EventsQuery {
  std::int64_t after = 0;  // >= 0
  int limit = 50;          // 1..200
  std::vector<FieldError> errors;
};
EventsQuery parse_events_query(boost::urls::params_view query);

}  // namespace payorch::http
