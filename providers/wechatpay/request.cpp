#include "providers/wechatpay/request.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

namespace payorch::providers::wechatpay {
namespace {

namespace json = boost::json;

std::string segment(const std::string& value) {
  return boost::urls::encode(value, boost::urls::unreserved_chars);
}

}  // namespace

bool valid_out_trade_no(const std::string& key) {
  if (key.empty() || key.size() > 32) return false;
  for (const char c : key) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string order_path(const std::string& product) { return "/v3/pay/transactions/" + product; }

std::string order_body(const std::string& product, const ChargeRequest& req, const Merchant& m) {
  json::object amount{{"total", req.amount_minor}, {"currency", req.currency}};
  json::object body{{"appid", m.appid},
                    {"mchid", m.mchid},
                    {"description", req.payee.empty() ? req.client_key : req.payee},
                    {"out_trade_no", req.client_key},
                    {"amount", std::move(amount)}};
  if (product == "codepay") {
    body["payer"] = json::object{{"auth_code", req.source}};
    body["scene_info"] = json::object{{"store_info", json::object{}}};
  } else {
    body["notify_url"] = m.notify_url;
    if (product == "jsapi") body["payer"] = json::object{{"openid", req.source}};
  }
  return json::serialize(body);
}

std::string query_path(const std::string& out_trade_no, const std::string& mchid) {
  return "/v3/pay/transactions/out-trade-no/" + segment(out_trade_no) + "?mchid=" + segment(mchid);
}

std::string close_path(const std::string& out_trade_no) {
  return "/v3/pay/transactions/out-trade-no/" + segment(out_trade_no) + "/close";
}

std::string close_body(const std::string& mchid) { return json::serialize(json::object{{"mchid", mchid}}); }

std::string refund_body(const RefundRequest& req, std::int64_t order_total, const std::string& notify_url) {
  return json::serialize(json::object{
      {"out_trade_no", req.charge_client_key},
      {"out_refund_no", req.client_key},
      {"notify_url", notify_url},
      {"amount", json::object{{"refund", req.amount_minor}, {"total", order_total}, {"currency", req.currency}}}});
}

std::string refund_query_path(const std::string& out_refund_no) {
  return "/v3/refund/domestic/refunds/" + segment(out_refund_no);
}

}  // namespace payorch::providers::wechatpay
