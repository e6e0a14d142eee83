#pragma once
// The pure parts of reading a tenant request (docs/contract.md §2): request headers and query strings.
// No I/O; Api calls these before it touches storage.
#include <boost/url/params_view.hpp>

#include <cstdint>
#include <functional>
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

// The media type of a Content-Type value, lower-cased, without its parameters.
std::string media_type(std::string_view content_type);
// Whether a Content-Type names application/json (any case, parameters ignored).
bool json_content_type(std::string_view content_type);

// Every route reads a query parameter as one value: a key given more than once (`?id=A&id=B`,
// even with the same value; keys compared once percent-decoded) is refused before the route
// reads any of them, since which one counts would be a guess. One `repeated` error per such
// key, in the order each was first repeated; none when every key is given once.
std::vector<FieldError> repeated_query_parameters(boost::urls::params_view query);

// The one pagination vocabulary of every list (payments, events, reconciliation cases):
// `limit` (1..200, default 50) and `cursor` (the `next_cursor` of the previous page). The events
// feed also takes `after`, the name docs/contract.md §6 gives it, as an alias of `cursor`; both at once are
// refused.
struct PageQuery {
  int limit = 50;
  std::optional<std::string> cursor;  // as valid_cursor accepted it
};
struct ListSpec {
  bool (*valid_cursor)(std::string_view) = nullptr;
  bool after_alias = false;
};
// Reads a list's query string: the pagination parameters here, the list's own filters through
// `filter` (which returns false for a key it does not know: refused as unknown_field). Every bad
// parameter is appended to `errors` (422).
PageQuery parse_list_query(boost::urls::params_view query, const ListSpec& spec,
                           std::vector<FieldError>& errors,
                           const std::function<bool(std::string_view key, const std::string& value)>& filter);

// GET /v1/payments?state=&limit=&cursor=.
struct PaymentsQuery {
  std::optional<PaymentState> state;
  PageQuery page;
  std::vector<FieldError> errors;
};
PaymentsQuery parse_payments_query(boost::urls::params_view query);

// GET /v1/events?cursor=|after=&limit=.
struct EventsQuery {
  std::int64_t after = 0;  // the cursor: the feed position after which to read, >= 0
  int limit = 50;
  std::vector<FieldError> errors;
};
EventsQuery parse_events_query(boost::urls::params_view query);

}  // namespace payorch::http
