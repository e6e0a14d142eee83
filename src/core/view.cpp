#include "core/view.h"

namespace payorch {
boost::json::value json_or_null(const std::optional<std::string>& s) {
  if (!s) return nullptr;
  return boost::json::value(*s);
}

boost::json::object payment_view(const Payment& p) {
  boost::json::object v;
  v["id"] = p.id;
  v["operation_id"] = p.operation_id;
  v["state"] = to_string(p.state);
  v["amount_minor"] = p.amount_minor;
  v["currency"] = p.currency;
  v["payee"] = p.payee;
  v["source"] = p.source;
  v["provider"] = p.provider;
  v["client_key"] = p.client_key;
  v["request_digest"] = p.request_digest;
  v["description"] = json_or_null(p.description);
  boost::json::object md;
  for (const auto& [k, val] : p.metadata) md[k] = val;
  v["metadata"] = std::move(md);
  v["created_at"] = format_rfc3339(p.created_at);
  v["updated_at"] = format_rfc3339(p.updated_at);
  v["attempt_count"] = p.attempt_count;
  v["vendor_reference"] = json_or_null(p.vendor_reference);
  if (p.failure_code) {
    v["failure"] = boost::json::object{{"code", *p.failure_code},
                                       {"message", p.failure_message.value_or("")}};
  } else {
    v["failure"] = nullptr;
  }
  if (p.reconciliation) {
    v["reconciliation"] = boost::json::object{{"case_id", p.reconciliation->case_id},
                                              {"reason", p.reconciliation->reason},
                                              {"status", p.reconciliation->status}};
  } else {
    v["reconciliation"] = nullptr;
  }
  return v;
}

boost::json::object event_body(const std::string& event_id, EventType type, UnixMillis created_at,
                               const Payment& p) {
  boost::json::object e;
  e["id"] = event_id;
  e["type"] = to_string(type);
  e["created_at"] = format_rfc3339(created_at);
  e["payment"] = payment_view(p);
  return e;
}

}  // namespace payorch
