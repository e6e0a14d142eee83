#include "core/view.h"

namespace payorch {
boost::json::value json_or_null(const std::optional<std::string>& s) {
  if (!s) return nullptr;
  return boost::json::value(*s);
}

namespace {

boost::json::object metadata_json(const std::map<std::string, std::string>& metadata) {
  boost::json::object md;
  for (const auto& [k, val] : metadata) md[k] = val;
  return md;
}

// "failure": null | {"code","message"}
boost::json::value failure_json(const std::optional<std::string>& code, const std::optional<std::string>& message) {
  if (!code) return nullptr;
  return boost::json::object{{"code", *code}, {"message", message.value_or("")}};
}

// "reconciliation": null | {"case_id","reason","status"}
boost::json::value reconciliation_json(const std::optional<CaseSummary>& c) {
  if (!c) return nullptr;
  return boost::json::object{{"case_id", c->case_id}, {"reason", c->reason}, {"status", c->status}};
}

boost::json::object event_envelope(const std::string& event_id, std::string_view type, UnixMillis created_at) {
  boost::json::object e;
  e["id"] = event_id;
  e["type"] = type;
  e["created_at"] = format_rfc3339(created_at);
  return e;
}

}  // namespace

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
  v["metadata"] = metadata_json(p.metadata);
  v["created_at"] = format_rfc3339(p.created_at);
  v["updated_at"] = format_rfc3339(p.updated_at);
  v["attempt_count"] = p.attempt_count;
  v["vendor_reference"] = json_or_null(p.vendor_reference);
  v["failure"] = failure_json(p.failure_code, p.failure_message);
  v["reconciliation"] = reconciliation_json(p.reconciliation);
  v["amount_refunded_minor"] = p.amount_refunded_minor;
  return v;
}

std::string_view event_type(EventType type, const Payment& row) {
  return row.refund_of ? refund_event_type(type) : to_string(type);
}

boost::json::object event_body(const std::string& event_id, EventType type, UnixMillis created_at,
                               const Payment& p) {
  if (p.refund_of) return refund_event_body(event_id, type, created_at, as_refund(p));
  boost::json::object e = event_envelope(event_id, to_string(type), created_at);
  e["payment"] = payment_view(p);
  return e;
}

boost::json::object refund_view(const Refund& r) {
  boost::json::object v;
  v["id"] = r.id;
  v["operation_id"] = r.operation_id;
  v["payment_id"] = r.payment_id;
  v["payment_operation_id"] = r.payment_operation_id;
  v["state"] = to_string(r.state);
  v["amount_minor"] = r.amount_minor;
  v["currency"] = r.currency;
  v["client_key"] = r.client_key;
  v["request_digest"] = r.request_digest;
  v["reason"] = json_or_null(r.reason);
  v["metadata"] = metadata_json(r.metadata);
  v["created_at"] = format_rfc3339(r.created_at);
  v["updated_at"] = format_rfc3339(r.updated_at);
  v["attempt_count"] = r.attempt_count;
  v["vendor_reference"] = json_or_null(r.vendor_reference);
  v["failure"] = failure_json(r.failure_code, r.failure_message);
  v["reconciliation"] = reconciliation_json(r.reconciliation);
  return v;
}

boost::json::object refund_event_body(const std::string& event_id, EventType type, UnixMillis created_at,
                                      const Refund& r) {
  boost::json::object e = event_envelope(event_id, refund_event_type(type), created_at);
  e["refund"] = refund_view(r);
  return e;
}

}  // namespace payorch
