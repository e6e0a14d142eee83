// providers/alipay/gateway: the signing content, forms, amounts, timestamps, and the answer text
// the signature covers.
#include <doctest/doctest.h>

#include "providers/alipay/gateway.h"
#include "providers/rsa_sha256.h"
#include "support/alipay_emulator.h"

namespace {

namespace alipay = payorch::providers::alipay;

}  // namespace

TEST_CASE("alipay gateway: signing content is sorted k=v without sign and empty values") {
  const alipay::Params p{{"method", "alipay.trade.query"}, {"app_id", "1"}, {"sign", "x"},
                         {"sign_type", "RSA2"}, {"notify_url", ""}, {"biz_content", "{\"a\":1}"}};
  CHECK(alipay::signing_content(p, false) == "app_id=1&biz_content={\"a\":1}&method=alipay.trade.query&sign_type=RSA2");
  CHECK(alipay::signing_content(p, true) == "app_id=1&biz_content={\"a\":1}&method=alipay.trade.query");
}

TEST_CASE("alipay gateway: forms round-trip; a broken escape or a repeated name is refused") {
  const alipay::Params p{{"a b", "x+y=z&w"}, {"c", "支付"}};
  CHECK(alipay::form_decode(alipay::form_encode(p)) == p);
  CHECK(alipay::form_decode("a=1+2")->at("a") == "1 2");
  CHECK_FALSE(alipay::form_decode("a=%2").has_value());
  CHECK_FALSE(alipay::form_decode("a=1&a=2").has_value());
}

TEST_CASE("alipay gateway: amounts in yuan, timestamps in China Standard Time") {
  CHECK(alipay::yuan_text(1234) == "12.34");
  CHECK(alipay::yuan_text(5) == "0.05");
  CHECK(alipay::minor_of_yuan("12.3") == 1230);
  CHECK(alipay::minor_of_yuan("12") == 1200);
  CHECK_FALSE(alipay::minor_of_yuan("12.345").has_value());
  CHECK_FALSE(alipay::minor_of_yuan("-1").has_value());
  CHECK_FALSE(alipay::minor_of_yuan("1e2").has_value());
  CHECK(alipay::gateway_timestamp(0) == "1970-01-01 08:00:00");
  CHECK(alipay::gateway_timestamp(1764698400) == "2025-12-03 02:00:00");
}

TEST_CASE("alipay gateway: the response member's text as written, and its signature") {
  const std::string body =
      R"({"alipay_trade_query_response" : {"code":"10000","msg":"Success","x":"}\"{"} ,"sign":"abc"})";
  CHECK(alipay::member_text(body, "alipay_trade_query_response") == R"({"code":"10000","msg":"Success","x":"}\"{"})");
  CHECK(alipay::member_text(body, "sign") == "\"abc\"");
  CHECK_FALSE(alipay::member_text(body, "other").has_value());

  const std::string member = R"({"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_NOT_EXIST"})";
  const auto sign = payorch::providers::rsa_sha256_sign_base64(payorch::test::alipay_key("alipay_private.pem"), member);
  REQUIRE(sign.has_value());
  const std::string answer = R"({"alipay_trade_query_response":)" + member + R"(,"sign":")" + *sign + "\"}";
  std::string why;
  const auto read = alipay::read_answer(answer, "alipay.trade.query", payorch::test::alipay_key("alipay_public.pem"), why);
  REQUIRE_MESSAGE(read.has_value(), why);
  CHECK(read->sub_code == "ACQ.TRADE_NOT_EXIST");
  // The same answer re-serialized (a space added) no longer verifies: the text is what is signed.
  const std::size_t msg = answer.find("\"msg\"");
  const std::string spaced = answer.substr(0, msg) + " " + answer.substr(msg);
  CHECK_FALSE(alipay::read_answer(spaced, "alipay.trade.query", payorch::test::alipay_key("alipay_public.pem"), why));
  CHECK_FALSE(payorch::providers::rsa_sha256_verify_base64(payorch::test::alipay_key("alipay_public.pem"), member, "not base64!"));
}
