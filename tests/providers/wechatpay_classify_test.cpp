// providers/wechatpay/classify.h, row by row, as pure functions of an answer: the rows the
// emulator does not produce (codepay's USERPAYING error, 429, NOT_ENOUGH, NO_AUTH, unknown
// states, unreadable bodies) next to the ones it does.
#include <doctest/doctest.h>

#include <string>

#include "providers/wechatpay/classify.h"

namespace {

using payorch::VendorOutcome;
using payorch::net::HttpResult;
using payorch::providers::ChargeRequest;
using payorch::providers::RefundRequest;
namespace wx = payorch::providers::wechatpay;

HttpResult answer(int status, std::string body) {
  HttpResult r;
  r.kind = HttpResult::response;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResult error(int status, const std::string& code) {
  return answer(status, R"({"code":")" + code + R"(","message":"test"})");
}

const ChargeRequest charge{"ck_classify_1", 1200, "CNY", "payee", "o_user"};

std::string transaction(const std::string& state, int total = 1200) {
  return R"({"appid":"wx","mchid":"1900000109","out_trade_no":"ck_classify_1","transaction_id":"42000001",)"
         R"("trade_state":")" + state + R"(","amount":{"total":)" + std::to_string(total) + R"(,"currency":"CNY"}})";
}

}  // namespace

TEST_CASE("wechatpay classify: the error rows every call shares") {
  struct Row {
    int status;
    std::string code;
    VendorOutcome expected;
  };
  const Row rows[] = {
      {401, "SIGN_ERROR", VendorOutcome::auth_refused},
      {403, "NO_AUTH", VendorOutcome::auth_refused},
      {403, "OUT_TRADE_NO_USED", VendorOutcome::ambiguous},
      {403, "RULE_LIMIT", VendorOutcome::ambiguous},
      {429, "FREQUENCY_LIMITED", VendorOutcome::ambiguous},
      {403, "NOT_ENOUGH", VendorOutcome::declined},
      {400, "PARAM_ERROR", VendorOutcome::declined},
      {400, "INVALID_REQUEST", VendorOutcome::declined},
      {400, "APPID_MCHID_NOT_MATCH", VendorOutcome::declined},
      {400, "MCH_NOT_EXISTS", VendorOutcome::declined},
      {400, "SOMETHING_NEW", VendorOutcome::ambiguous},
      {500, "SYSTEM_ERROR", VendorOutcome::ambiguous},
      {502, "", VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.code);
    const auto r = wx::classify_order(error(row.status, row.code), charge, "native");
    CHECK(r.outcome == row.expected);
    if (row.expected == VendorOutcome::declined) CHECK(r.decline_code == row.code);
  }
  CHECK(wx::classify_order(answer(500, "<html>"), charge, "native").outcome == VendorOutcome::ambiguous);
}

TEST_CASE("wechatpay classify: orders") {
  CHECK(wx::classify_order(answer(200, R"({"code_url":"weixin://x"})"), charge, "native").outcome ==
        VendorOutcome::pending);
  CHECK(wx::classify_order(answer(200, R"({"prepay_id":"wx1"})"), charge, "jsapi").outcome == VendorOutcome::pending);
  CHECK(wx::classify_order(answer(200, R"({"prepay_id":"wx1"})"), charge, "native").outcome ==
        VendorOutcome::ambiguous);
  CHECK(wx::classify_order(answer(200, "{}"), charge, "jsapi").outcome == VendorOutcome::ambiguous);
  CHECK(wx::classify_order(answer(200, R"({"code_url":"a","code_url":"b"})"), charge, "native").outcome ==
        VendorOutcome::ambiguous);  // a key named twice is unreadable
  const auto closed = wx::classify_order(error(400, "ORDER_CLOSED"), charge, "native");
  CHECK(closed.outcome == VendorOutcome::declined);
  CHECK(closed.decline_code == "ORDER_CLOSED");
  CHECK(wx::classify_order(error(403, "USERPAYING"), charge, "codepay").outcome == VendorOutcome::pending);
  CHECK(wx::classify_order(error(403, "USERPAYING"), charge, "native").outcome == VendorOutcome::auth_refused);
  CHECK(wx::classify_order(answer(200, transaction("SUCCESS")), charge, "codepay").outcome == VendorOutcome::succeeded);
}

TEST_CASE("wechatpay classify: every trade_state, and answers about another order") {
  struct Row {
    std::string state;
    VendorOutcome expected;
  };
  const Row rows[] = {
      {"SUCCESS", VendorOutcome::succeeded}, {"REFUND", VendorOutcome::succeeded},
      {"NOTPAY", VendorOutcome::pending},    {"USERPAYING", VendorOutcome::pending},
      {"CLOSED", VendorOutcome::declined},   {"REVOKED", VendorOutcome::declined},
      {"PAYERROR", VendorOutcome::declined}, {"ACCEPT", VendorOutcome::ambiguous},
  };
  for (const Row& row : rows) {
    CAPTURE(row.state);
    const auto r = wx::classify_query(answer(200, transaction(row.state)), charge);
    CHECK(r.outcome == row.expected);
    if (row.expected == VendorOutcome::declined) CHECK(r.decline_code == row.state);
  }
  const auto paid = wx::classify_query(answer(200, transaction("SUCCESS")), charge);
  CHECK(paid.vendor_reference == "42000001");
  CHECK(paid.amount_minor == 1200);
  CHECK(wx::classify_query(answer(200, transaction("SUCCESS", 1300)), charge).outcome == VendorOutcome::ambiguous);
  auto other = charge;
  other.client_key = "ck_classify_2";
  CHECK(wx::classify_query(answer(200, transaction("NOTPAY")), other).outcome == VendorOutcome::ambiguous);
  CHECK(wx::classify_query(answer(200, R"({"out_trade_no":"ck_classify_1"})"), charge).outcome ==
        VendorOutcome::ambiguous);
  CHECK(wx::classify_query(error(404, "ORDER_NOT_EXIST"), charge).outcome == VendorOutcome::not_found);
  CHECK(wx::classify_query(error(404, "NOT_FOUND"), charge).outcome == VendorOutcome::ambiguous);
}

TEST_CASE("wechatpay classify: close") {
  CHECK(wx::classify_close(answer(204, "")).outcome == VendorOutcome::succeeded);
  CHECK(wx::classify_close(error(400, "ORDER_CLOSED")).outcome == VendorOutcome::succeeded);
  const auto paid = wx::classify_close(error(400, "ORDERPAID"));
  CHECK(paid.outcome == VendorOutcome::declined);
  CHECK(paid.decline_code == "ORDERPAID");
  CHECK(wx::classify_close(error(404, "ORDER_NOT_EXIST")).outcome == VendorOutcome::not_found);
  CHECK(wx::classify_close(error(403, "RULE_LIMIT")).outcome == VendorOutcome::ambiguous);
  CHECK(wx::classify_close(error(500, "SYSTEM_ERROR")).outcome == VendorOutcome::ambiguous);
  CHECK(wx::classify_close(error(401, "SIGN_ERROR")).outcome == VendorOutcome::auth_refused);
  CHECK(wx::classify_close(answer(200, "{}")).outcome == VendorOutcome::ambiguous);
}

TEST_CASE("wechatpay classify: refunds") {
  const RefundRequest refund{"ck_refund_1", "", "ck_classify_1", 400, "CNY"};
  const auto body = [](const std::string& status, int amount) {
    return R"({"refund_id":"5000001","out_refund_no":"ck_refund_1","out_trade_no":"ck_classify_1","status":")" +
           status + R"(","amount":{"total":1200,"refund":)" + std::to_string(amount) + R"(,"currency":"CNY"}})";
  };
  struct Row {
    std::string status;
    VendorOutcome expected;
  };
  const Row rows[] = {{"SUCCESS", VendorOutcome::succeeded}, {"PROCESSING", VendorOutcome::pending},
                      {"CLOSED", VendorOutcome::declined},   {"CLOSE", VendorOutcome::declined},
                      {"ABNORMAL", VendorOutcome::ambiguous}, {"NEW", VendorOutcome::ambiguous}};
  for (const Row& row : rows) {
    CAPTURE(row.status);
    CHECK(wx::classify_refund(answer(200, body(row.status, 400)), refund, false).outcome == row.expected);
  }
  CHECK(wx::classify_refund(answer(200, body("SUCCESS", 401)), refund, false).outcome == VendorOutcome::ambiguous);
  CHECK(wx::classify_refund(error(404, "RESOURCE_NOT_EXISTS"), refund, true).outcome == VendorOutcome::not_found);
  CHECK(wx::classify_refund(error(404, "RESOURCE_NOT_EXISTS"), refund, false).outcome == VendorOutcome::ambiguous);
  CHECK(wx::classify_refund(error(403, "NOT_ENOUGH"), refund, false).outcome == VendorOutcome::declined);
}

TEST_CASE("wechatpay classify: a refused query says nothing about the order or refund it asked after") {
  // The codes that decline an order or a refund when they answer its creation (above) answer a
  // query too, e.g. every query of a merchant id the configuration changed; the order may still
  // be paid, the refund may have been paid.
  const RefundRequest refund{"ck_refund_1", "", "ck_classify_1", 400, "CNY"};
  const struct {
    int status;
    std::string code;
  } refusals[] = {{400, "PARAM_ERROR"}, {400, "INVALID_REQUEST"}, {400, "APPID_MCHID_NOT_MATCH"},
                  {400, "MCH_NOT_EXISTS"}, {403, "NOT_ENOUGH"}};
  for (const auto& row : refusals) {
    CAPTURE(row.code);
    const auto order = wx::classify_query(error(row.status, row.code), charge);
    CHECK(order.outcome == VendorOutcome::ambiguous);
    CHECK_FALSE(order.decline_code.has_value());
    const auto asked = wx::classify_refund(error(row.status, row.code), refund, true);
    CHECK(asked.outcome == VendorOutcome::ambiguous);
    CHECK_FALSE(asked.decline_code.has_value());
    // Sent as a refund, the same answer still refuses the refund: nothing was done.
    CHECK(wx::classify_refund(error(row.status, row.code), refund, false).outcome == VendorOutcome::declined);
  }
  CHECK(wx::classify_query(error(401, "SIGN_ERROR"), charge).outcome == VendorOutcome::auth_refused);
  CHECK(wx::classify_query(error(403, "NO_AUTH"), charge).outcome == VendorOutcome::auth_refused);
}

TEST_CASE("wechatpay classify: the order's total a refund names is read from a paid order only") {
  CHECK(wx::paid_order_total(answer(200, transaction("SUCCESS", 900))) == 900);
  CHECK(wx::paid_order_total(answer(200, transaction("REFUND", 900))) == 900);
  CHECK_FALSE(wx::paid_order_total(answer(200, transaction("NOTPAY", 900))).has_value());
  CHECK_FALSE(wx::paid_order_total(error(404, "ORDER_NOT_EXIST")).has_value());
}
