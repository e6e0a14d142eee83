#include "providers/wechatpay/classify.h"

#include <array>

#include "providers/json_fields.h"
#include "providers/vendor_call.h"

namespace payorch::providers::wechatpay {
namespace {

namespace json = boost::json;

const json::object* object_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v ? v->if_object() : nullptr;
}

void add_difference(std::string& out, const std::string& what) {
  out += out.empty() ? "" : "; ";
  out += what;
}

std::string status_text(int status) { return "HTTP " + std::to_string(status); }

struct ErrorBody {
  std::string code;  // "" when the body names none
  std::string said;  // for the detail
};

ErrorBody error_body(const net::HttpResult& res) {
  const auto body = json_object(res.body);
  const auto code = body ? string_member(*body, "code") : std::nullopt;
  const auto message = body ? string_member(*body, "message") : std::nullopt;
  return {code.value_or(""),
          status_text(res.status) + (code ? " " + *code : "") + (message ? " (" + *message + ")" : "")};
}

VendorResult declined(int status, const std::string& code, std::string detail) {
  VendorResult r = outcome_only(VendorOutcome::declined, status, std::move(detail));
  r.decline_code = code;
  return r;
}

// What a call asks: to do something (an order, a refund), or what became of it.
enum class Asked { to_act, about_it };

// The error rows every call shares (classify.h). A refusal of a query (a parameter the vendor
// rejects, a merchant id it no longer knows, …) says nothing about the order or the refund it
// asked about: ambiguous, never declined.
VendorResult classify_error(const net::HttpResult& res, Asked asked) {
  const int status = res.status;
  const ErrorBody e = error_body(res);
  const auto refused = [&](const std::string& code) {
    if (asked == Asked::about_it)
      return outcome_only(VendorOutcome::ambiguous, status,
                          e.said + ": a refused query says nothing about what it asked after");
    return declined(status, code, e.said);
  };
  if (status == 401) return outcome_only(VendorOutcome::auth_refused, status, e.said);
  if (e.code == "OUT_TRADE_NO_USED" || e.code == "RULE_LIMIT" || e.code == "FREQUENCY_LIMITED" || status == 429)
    return outcome_only(VendorOutcome::ambiguous, status, e.said);
  if (status == 403 && e.code == "NOT_ENOUGH") return refused(e.code);
  if (status == 403) return outcome_only(VendorOutcome::auth_refused, status, e.said);
  static constexpr std::array<std::string_view, 4> refusals{"PARAM_ERROR", "INVALID_REQUEST",
                                                            "APPID_MCHID_NOT_MATCH", "MCH_NOT_EXISTS"};
  if (status == 400)
    for (std::string_view code : refusals)
      if (e.code == code) return refused(e.code);
  return outcome_only(VendorOutcome::ambiguous, status, e.said);
}

}  // namespace

VendorOutcome trade_state_outcome(std::string_view state) {
  if (state == "SUCCESS" || state == "REFUND") return VendorOutcome::succeeded;
  if (state == "NOTPAY" || state == "USERPAYING") return VendorOutcome::pending;
  if (state == "CLOSED" || state == "REVOKED" || state == "PAYERROR") return VendorOutcome::declined;
  return VendorOutcome::ambiguous;
}

VendorOutcome refund_status_outcome(std::string_view status) {
  if (status == "SUCCESS") return VendorOutcome::succeeded;
  if (status == "PROCESSING") return VendorOutcome::pending;
  if (status == "CLOSED" || status == "CLOSE") return VendorOutcome::declined;
  return VendorOutcome::ambiguous;  // ABNORMAL and anything unknown
}

VendorResult read_transaction(const json::object& t, const ChargeRequest* sent, int http_status) {
  const auto state = string_member(t, "trade_state");
  if (!state) return outcome_only(VendorOutcome::ambiguous, http_status, "transaction without trade_state");
  VendorResult r = outcome_only(trade_state_outcome(*state), http_status, "trade_state " + *state);
  if (r.outcome == VendorOutcome::declined) r.decline_code = *state;
  r.vendor_reference = string_member(t, "transaction_id");
  std::string differences;
  const auto out_trade_no = string_member(t, "out_trade_no");
  if (!out_trade_no) add_difference(differences, "out_trade_no missing");
  else if (sent && *out_trade_no != sent->client_key)
    add_difference(differences, "out_trade_no " + *out_trade_no + " != " + sent->client_key);
  if (const json::object* amount = object_field(t, "amount")) {
    r.amount_minor = integer_member(*amount, "total");
    r.currency = string_member(*amount, "currency");
  }
  if (r.outcome == VendorOutcome::succeeded) {
    if (!r.vendor_reference) add_difference(differences, "transaction_id missing");
    if (!r.amount_minor) add_difference(differences, "amount.total missing");
    else if (sent && *r.amount_minor != sent->amount_minor)
      add_difference(differences, "amount.total " + std::to_string(*r.amount_minor) + " != " +
                                      std::to_string(sent->amount_minor));
    // amount.currency is optional (CNY when absent, Transaction.yaml Amount).
    const std::string currency = r.currency.value_or("CNY");
    if (sent && currency != sent->currency) add_difference(differences, "currency " + currency + " != " + sent->currency);
  }
  if (!differences.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.decline_code.reset();
    r.detail += "; the answer does not match the order (" + differences + ")";
  }
  return r;
}

VendorResult read_refund(const json::object& body, const RefundRequest* sent, int http_status) {
  const auto status = string_member(body, "status") ? string_member(body, "status") : string_member(body, "refund_status");
  if (!status) return outcome_only(VendorOutcome::ambiguous, http_status, "refund without status");
  VendorResult r = outcome_only(refund_status_outcome(*status), http_status, "refund status " + *status);
  if (r.outcome == VendorOutcome::declined) r.decline_code = *status;
  r.vendor_reference = string_member(body, "refund_id");
  std::string differences;
  const auto out_refund_no = string_member(body, "out_refund_no");
  if (!out_refund_no) add_difference(differences, "out_refund_no missing");
  else if (sent && *out_refund_no != sent->client_key)
    add_difference(differences, "out_refund_no " + *out_refund_no + " != " + sent->client_key);
  const json::object* amount = object_field(body, "amount");
  if (amount) {
    r.amount_minor = integer_member(*amount, "refund");
    r.currency = string_member(*amount, "currency");
  }
  if (!r.amount_minor) add_difference(differences, "amount.refund missing");
  else if (sent && *r.amount_minor != sent->amount_minor)
    add_difference(differences, "amount.refund " + std::to_string(*r.amount_minor) + " != " +
                                    std::to_string(sent->amount_minor));
  if (sent && r.currency && *r.currency != sent->currency)
    add_difference(differences, "currency " + *r.currency + " != " + sent->currency);
  if (r.outcome == VendorOutcome::succeeded && !r.vendor_reference) add_difference(differences, "refund_id missing");
  if (!differences.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.decline_code.reset();
    r.detail += "; the answer does not match the refund (" + differences + ")";
  }
  return r;
}

std::optional<std::int64_t> paid_order_total(const net::HttpResult& res) {
  if (res.kind != net::HttpResult::response || res.status != 200) return std::nullopt;
  const auto body = json_object(res.body);
  if (!body) return std::nullopt;
  const auto state = string_member(*body, "trade_state");
  if (!state || (*state != "SUCCESS" && *state != "REFUND")) return std::nullopt;
  const json::object* amount = object_field(*body, "amount");
  return amount ? integer_member(*amount, "total") : std::nullopt;
}

VendorResult classify_order(const net::HttpResult& res, const ChargeRequest& sent, const std::string& product) {
  const int status = res.status;
  if (status != 200) {
    const ErrorBody e = error_body(res);
    if (e.code == "ORDER_CLOSED") return declined(status, e.code, e.said);
    // The payer must confirm (需要用户输入支付密码): v2's micropay said so with this error code;
    // should v3's codepay too, the order waits for the user like a 200 USERPAYING.
    if (product == "codepay" && e.code == "USERPAYING") return outcome_only(VendorOutcome::pending, status, e.said);
    return classify_error(res, Asked::to_act);
  }
  const auto body = json_object(res.body);
  if (!body) return outcome_only(VendorOutcome::ambiguous, status, "200 with a body that is not a JSON object");
  if (product == "codepay") return read_transaction(*body, &sent, status);
  const char* field = product == "jsapi" ? "prepay_id" : "code_url";
  const auto handle = string_member(*body, field);
  if (!handle || handle->empty())
    return outcome_only(VendorOutcome::ambiguous, status, std::string("200 without ") + field);
  return outcome_only(VendorOutcome::pending, status,
                      std::string("order created, waiting for the user (") + field + " " + *handle + ")");
}

VendorResult classify_query(const net::HttpResult& res, const ChargeRequest& sent) {
  const int status = res.status;
  if (status != 200) {
    const ErrorBody e = error_body(res);
    if (status == 404 && e.code == "ORDER_NOT_EXIST") return outcome_only(VendorOutcome::not_found, status, e.said);
    return classify_error(res, Asked::about_it);
  }
  const auto body = json_object(res.body);
  if (!body) return outcome_only(VendorOutcome::ambiguous, status, "200 with a body that is not a JSON object");
  return read_transaction(*body, &sent, status);
}

VendorResult classify_close(const net::HttpResult& res) {
  const int status = res.status;
  if (status == 204) return outcome_only(VendorOutcome::succeeded, status, "order closed");
  const ErrorBody e = error_body(res);
  if (e.code == "ORDERPAID") return declined(status, e.code, e.said + ": the order is paid");
  if (status == 400 && e.code == "ORDER_CLOSED")
    return outcome_only(VendorOutcome::succeeded, status, e.said + ": already closed");
  if (status == 404 && e.code == "ORDER_NOT_EXIST") return outcome_only(VendorOutcome::not_found, status, e.said);
  if (status == 401) return outcome_only(VendorOutcome::auth_refused, status, e.said);
  return outcome_only(VendorOutcome::ambiguous, status, e.said);
}

VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent, bool query) {
  const int status = res.status;
  if (status != 200) {
    const ErrorBody e = error_body(res);
    if (query && status == 404 && e.code == "RESOURCE_NOT_EXISTS") return outcome_only(VendorOutcome::not_found, status, e.said);
    return classify_error(res, query ? Asked::about_it : Asked::to_act);
  }
  const auto body = json_object(res.body);
  if (!body) return outcome_only(VendorOutcome::ambiguous, status, "200 with a body that is not a JSON object");
  return read_refund(*body, &sent, status);
}

}  // namespace payorch::providers::wechatpay
