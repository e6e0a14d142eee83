#include "providers/alipay/classify.h"

#include <boost/json/object.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "providers/alipay/gateway.h"
#include "providers/vendor_call.h"

namespace payorch::providers::alipay {
namespace {

namespace json = boost::json;

std::optional<std::string> string_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& codes, std::string_view code) {
  for (const std::string_view c : codes)
    if (c == code) return true;
  return false;
}

VendorResult with_code(VendorOutcome o, int status, std::string detail, std::string code) {
  VendorResult r = outcome_only(o, status, std::move(detail));
  r.decline_code = std::move(code);
  return r;
}

// Which call an answer belongs to, for the gateway rows of the table in classify.h.
enum class Call { submit, refund, lookup };

// The verified answer to `method` when the call's own table decides (10000, 10003, 40004);
// otherwise the result of the rows every call shares (classify.h).
std::variant<VendorResult, Answer> checked(const net::HttpResult& res, std::string_view method,
                                           const std::string& alipay_public_key, Call call) {
  if (auto r = without_answer(res)) return *r;
  const int status = res.status;
  if (status == 401 || status == 403)
    return outcome_only(VendorOutcome::auth_refused, status, "HTTP " + std::to_string(status));
  if (status != 200)
    return outcome_only(VendorOutcome::ambiguous, status, "HTTP " + std::to_string(status));
  std::string why;
  auto answer = read_answer(res.body, method, alipay_public_key, why);
  if (!answer) return outcome_only(VendorOutcome::ambiguous, status, why);
  const std::string& code = answer->code;
  if (code == "10000" || code == "10003" || code == "40004") return std::move(*answer);
  if (code == "20001") return outcome_only(VendorOutcome::auth_refused, status, answer->said);
  if (code == "40001" || code == "40002") {
    if (answer->sub_code == "isv.invalid-signature" || answer->sub_code == "isv.invalid-app-id")
      return outcome_only(VendorOutcome::auth_refused, status, answer->said);
    // The gateway refused the request itself: nothing was created or refunded. For a lookup
    // or a close that says nothing about the order.
    if (call == Call::lookup) return outcome_only(VendorOutcome::ambiguous, status, answer->said);
    return with_code(VendorOutcome::declined, status, answer->said,
                     answer->sub_code.empty() ? code : answer->sub_code);
  }
  return outcome_only(VendorOutcome::ambiguous, status, answer->said);  // 20000 and unknown
}

void add_difference(std::string& out, const std::string& what) {
  out += out.empty() ? "" : "; ";
  out += what;
}

// The answer must be about what was sent: out_trade_no (when given) and total_amount.
void check_trade(const json::object& o, const ChargeRequest& sent, VendorResult& r, bool amount_required) {
  std::string differences;
  if (const auto no = string_field(o, "out_trade_no"); no && *no != sent.client_key)
    add_difference(differences, "out_trade_no " + *no + " != " + sent.client_key);
  if (const auto amount = string_field(o, "total_amount")) {
    const auto minor = minor_of_yuan(*amount);
    if (!minor) {
      add_difference(differences, "total_amount \"" + *amount + "\" is not an amount");
    } else {
      r.amount_minor = *minor;
      r.currency = "CNY";
      if (*minor != sent.amount_minor)
        add_difference(differences, "total_amount " + *amount + " != " + yuan_text(sent.amount_minor));
    }
  } else if (amount_required) {
    add_difference(differences, "total_amount missing");
  }
  if (!differences.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.detail += "; answer does not match the request (" + differences + ")";
  }
}

constexpr std::array<std::string_view, 12> submit_declines{
    "ACQ.TRADE_HAS_CLOSE",         "ACQ.INVALID_PARAMETER",
    "ACQ.ACCESS_FORBIDDEN",        "ACQ.EXIST_FORBIDDEN_WORD",
    "ACQ.PARTNER_ERROR",           "ACQ.TOTAL_FEE_EXCEED",
    "ACQ.BUYER_SELLER_EQUAL",      "ACQ.BUYER_ENABLE_STATUS_FORBID",
    "ACQ.BUYER_PAYMENT_AMOUNT_DAY_LIMIT_ERROR", "ACQ.BEYOND_PAY_RESTRICTION",
    "ACQ.PAYMENT_AUTH_CODE_INVALID", "ACQ.BUYER_BALANCE_NOT_ENOUGH"};

constexpr std::array<std::string_view, 3> close_refusals{
    "ACQ.TRADE_STATUS_ERROR", "ACQ.REASON_ILLEGAL_STATUS", "ACQ.REASON_TRADE_STATUS_INVALID"};

constexpr std::array<std::string_view, 7> refund_declines{
    "ACQ.TRADE_NOT_EXIST",           "ACQ.TRADE_STATUS_ERROR",
    "ACQ.REASON_TRADE_REFUND_FEE_ERR", "ACQ.REFUND_AMT_NOT_EQUAL_TOTAL",
    "ACQ.SELLER_BALANCE_NOT_ENOUGH", "ACQ.TRADE_HAS_FINISHED",
    "ACQ.INVALID_PARAMETER"};

constexpr std::string_view pay_method = "alipay.trade.pay";
constexpr std::string_view precreate_method = "alipay.trade.precreate";

}  // namespace

VendorResult classify_submit(const net::HttpResult& res, const ChargeRequest& sent, Product product,
                             const std::string& alipay_public_key) {
  const std::string_view method = product == Product::pay ? pay_method : precreate_method;
  auto c = checked(res, method, alipay_public_key, Call::submit);
  if (auto* r = std::get_if<VendorResult>(&c)) return *r;
  const Answer* answer = std::get_if<Answer>(&c);
  const int status = res.status;
  const json::object& o = answer->response;
  if (answer->code == "10000" || (answer->code == "10003" && product == Product::pay)) {
    const bool paid = answer->code == "10000" && product == Product::pay;
    VendorResult r = outcome_only(paid ? VendorOutcome::succeeded : VendorOutcome::pending, status,
                                  answer->said);
    r.vendor_reference = string_field(o, "trade_no");
    // A paid trade must name its amount; a waiting one may not have it yet.
    check_trade(o, sent, r, paid);
    if (paid && !r.vendor_reference) {
      r.outcome = VendorOutcome::ambiguous;
      r.detail += "; no trade_no";
    }
    return r;
  }
  if (answer->code != "40004") return outcome_only(VendorOutcome::ambiguous, status, answer->said);
  if (listed(submit_declines, answer->sub_code))
    return with_code(VendorOutcome::declined, status, answer->said, answer->sub_code);
  // ACQ.SYSTEM_ERROR, ACQ.TRADE_HAS_SUCCESS, ACQ.CONTEXT_INCONSISTENT, ACQ.TRADE_BUYER_NOT_MATCH
  // and anything unknown: the query decides.
  return outcome_only(VendorOutcome::ambiguous, status, answer->said);
}

VendorResult classify_query(const net::HttpResult& res, const ChargeRequest& sent,
                            const std::string& alipay_public_key) {
  auto c = checked(res, "alipay.trade.query", alipay_public_key, Call::lookup);
  if (auto* r = std::get_if<VendorResult>(&c)) return *r;
  const Answer* answer = std::get_if<Answer>(&c);
  const int status = res.status;
  const json::object& o = answer->response;
  if (answer->code == "10000") {
    const std::string state = string_field(o, "trade_status").value_or("");
    VendorResult r = outcome_only(VendorOutcome::ambiguous, status, answer->said + " trade_status " + state);
    r.vendor_reference = string_field(o, "trade_no");
    if (state == "TRADE_SUCCESS" || state == "TRADE_FINISHED") {
      r.outcome = VendorOutcome::succeeded;
    } else if (state == "WAIT_BUYER_PAY") {
      r.outcome = VendorOutcome::pending;
    } else if (state == "TRADE_CLOSED") {
      r.outcome = VendorOutcome::declined;
      r.decline_code = state;
    } else {
      return r;
    }
    check_trade(o, sent, r, r.outcome == VendorOutcome::succeeded);
    return r;
  }
  if (answer->code == "40004" && answer->sub_code == "ACQ.TRADE_NOT_EXIST")
    return outcome_only(VendorOutcome::not_found, status, answer->said);
  return outcome_only(VendorOutcome::ambiguous, status, answer->said);
}

VendorResult classify_close(const net::HttpResult& res, const ChargeRequest& sent,
                            const std::string& alipay_public_key) {
  auto c = checked(res, "alipay.trade.close", alipay_public_key, Call::lookup);
  if (auto* r = std::get_if<VendorResult>(&c)) return *r;
  const Answer* answer = std::get_if<Answer>(&c);
  const int status = res.status;
  if (answer->code == "10000") {
    VendorResult r = outcome_only(VendorOutcome::succeeded, status, answer->said + ": closed");
    r.vendor_reference = string_field(answer->response, "trade_no");
    if (const auto no = string_field(answer->response, "out_trade_no"); no && *no != sent.client_key) {
      r.outcome = VendorOutcome::ambiguous;
      r.detail += "; out_trade_no " + *no + " != " + sent.client_key;
    }
    return r;
  }
  if (answer->code == "40004" && answer->sub_code == "ACQ.TRADE_NOT_EXIST")
    return outcome_only(VendorOutcome::not_found, status, answer->said);
  if (answer->code == "40004" && listed(close_refusals, answer->sub_code))
    return with_code(VendorOutcome::declined, status, answer->said, answer->sub_code);
  return outcome_only(VendorOutcome::ambiguous, status, answer->said);
}

VendorResult fence_after_refusal(const VendorResult& closed, const VendorResult& asked) {
  const std::string both = closed.detail + "; then alipay.trade.query: " + asked.detail;
  if (asked.outcome == VendorOutcome::declined && asked.decline_code == "TRADE_CLOSED") {
    VendorResult r = outcome_only(VendorOutcome::succeeded, asked.http_status, both + ": already closed");
    r.vendor_reference = asked.vendor_reference;
    return r;
  }
  if (asked.outcome == VendorOutcome::succeeded) {
    VendorResult r = outcome_only(VendorOutcome::declined, closed.http_status, both + ": paid");
    r.decline_code = closed.decline_code;
    r.vendor_reference = asked.vendor_reference;
    r.amount_minor = asked.amount_minor;
    r.currency = asked.currency;
    return r;
  }
  return outcome_only(VendorOutcome::ambiguous, asked.http_status, both);
}

VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent,
                             const std::string& alipay_public_key) {
  auto c = checked(res, "alipay.trade.refund", alipay_public_key, Call::refund);
  if (auto* r = std::get_if<VendorResult>(&c)) return *r;
  const Answer* answer = std::get_if<Answer>(&c);
  const int status = res.status;
  if (answer->code == "10000") {
    // 10000 says the call was taken; fund_change "Y" that this call moved the money. "N" (or
    // none) may be a repeat of a refund made before, or a refund not made: the refund query
    // tells them apart (pending: recovery asks it).
    const std::string fund_change = string_field(answer->response, "fund_change").value_or("");
    const bool moved = fund_change == "Y";
    VendorResult r = outcome_only(
        moved ? VendorOutcome::succeeded : VendorOutcome::pending, status,
        answer->said + " fund_change " + (fund_change.empty() ? "(none)" : fund_change) +
            (moved ? "" : ": no money moved by this call; alipay.trade.fastpay.refund.query says "
                          "whether the refund was made"));
    r.vendor_reference = sent.client_key;  // Alipay knows a refund by its out_request_no
    if (const auto no = string_field(answer->response, "out_trade_no");
        no && *no != sent.charge_client_key) {
      r.outcome = VendorOutcome::ambiguous;
      r.detail += "; out_trade_no " + *no + " != " + sent.charge_client_key;
    }
    return r;
  }
  if (answer->code == "40004" && listed(refund_declines, answer->sub_code))
    return with_code(VendorOutcome::declined, status, answer->said, answer->sub_code);
  return outcome_only(VendorOutcome::ambiguous, status, answer->said);
}

VendorResult classify_refund_query(const net::HttpResult& res, const RefundRequest& sent,
                                   const std::string& alipay_public_key) {
  auto c = checked(res, "alipay.trade.fastpay.refund.query", alipay_public_key, Call::lookup);
  if (auto* r = std::get_if<VendorResult>(&c)) return *r;
  const Answer* answer = std::get_if<Answer>(&c);
  const int status = res.status;
  const json::object& o = answer->response;
  if (answer->code == "40004" && answer->sub_code == "ACQ.TRADE_NOT_EXIST")
    return outcome_only(VendorOutcome::not_found, status, answer->said);
  if (answer->code != "10000") return outcome_only(VendorOutcome::ambiguous, status, answer->said);
  const auto refund_status = string_field(o, "refund_status");
  const auto amount = string_field(o, "refund_amount");
  const auto request_no = string_field(o, "out_request_no");
  if (!refund_status && !amount && !request_no)
    return outcome_only(VendorOutcome::not_found, status, answer->said + ": no refund data");
  if (refund_status && *refund_status != "REFUND_SUCCESS")
    return outcome_only(VendorOutcome::ambiguous, status, answer->said + " refund_status " + *refund_status);
  VendorResult r = outcome_only(VendorOutcome::succeeded, status, answer->said + " refunded");
  r.vendor_reference = sent.client_key;
  std::string differences;
  if (request_no && *request_no != sent.client_key)
    add_difference(differences, "out_request_no " + *request_no + " != " + sent.client_key);
  const auto minor = amount ? minor_of_yuan(*amount) : std::nullopt;
  if (!minor) {
    add_difference(differences, "refund_amount missing or not an amount");
  } else {
    r.amount_minor = *minor;
    r.currency = "CNY";
    if (*minor != sent.amount_minor)
      add_difference(differences, "refund_amount " + *amount + " != " + yuan_text(sent.amount_minor));
  }
  if (!differences.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.detail += "; answer does not match the request (" + differences + ")";
  }
  return r;
}

}  // namespace payorch::providers::alipay
