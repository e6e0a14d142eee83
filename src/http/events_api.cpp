// GET /v1/events (docs/contract.md §6): the tenant's event feed, with where each push delivery stands.
#include "http/api.h"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <algorithm>

#include "core/view.h"
#include "http/request_fields.h"
#include "store/outbox.h"

namespace payorch::http {

namespace bhttp = boost::beast::http;

Response Api::list_events(const Request& req, const std::string& tenant_id, boost::urls::params_view query) {
  const unsigned v = req.version();
  EventsQuery q = parse_events_query(query);
  if (!q.errors.empty())
    return invalid_request("invalid query parameters", q.errors, v);
  auto page = deps_.store.read_value([&](store::Tx& tx) { return tx.list_events(tenant_id, q.after, q.limit); });
  const bool pushed = std::find(push_tenants_.begin(), push_tenants_.end(), tenant_id) != push_tenants_.end();
  auto time_or_null = [](const std::optional<UnixMillis>& t) -> boost::json::value {
    if (!t) return nullptr;
    return boost::json::string(format_rfc3339(*t));
  };
  boost::json::array data;
  for (const auto& e : page.events) {
    // The event body exactly as pushed, plus where its push delivery stands.
    boost::json::object item = boost::json::parse(e.payload).as_object();
    std::string status = e.delivered_at ? "delivered" : pushed ? "pending" : "not_pushed";
    item["delivery"] = boost::json::object{
        {"status", status},
        {"attempts", e.attempts},
        {"delivered_at", time_or_null(e.delivered_at)},
        {"next_attempt_at", e.delivered_at || !pushed ? boost::json::value(nullptr) : time_or_null(e.next_attempt_at)},
        {"last_error", json_or_null(e.last_error)},
    };
    data.push_back(std::move(item));
  }
  boost::json::object body{{"data", std::move(data)}};
  if (page.next_cursor) body["next_cursor"] = std::to_string(*page.next_cursor);
  else body["next_cursor"] = nullptr;
  return make_json(200, body, v);
}
}  // namespace payorch::http
