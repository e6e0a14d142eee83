// providers/wechatpay follows a reload (SIGHUP) of its keys: the merchant key and serial sign
// the next request as soon as they are published, and callbacks verify with the platform key
// and serial published last, the previous ones refused.
#include <doctest/doctest.h>

#include <ctime>
#include <string>

#include "providers/rsa_sha256.h"
#include "providers/wechatpay_fixture.h"

namespace {

using payorch::VendorOutcome;
using payorch::providers::CallbackError;
using payorch::test::notification_from_library;
using payorch::test::SignedNotification;
using payorch::test::wechatpay_charge;
using payorch::test::wechatpay_key;
using payorch::test::WechatpayFixture;

constexpr const char* paid_resource = R"({"appid":"wxd678efh567hg6787","mchid":"1900000109",
  "out_trade_no":"ck_reload_paid_1","transaction_id":"4200000000202612030000000001","trade_type":"NATIVE",
  "trade_state":"SUCCESS","trade_state_desc":"ok","bank_type":"OTHERS","success_time":"2026-12-03T10:00:00+08:00",
  "payer":{"openid":"o_user"},"amount":{"total":1200,"payer_total":1200,"currency":"CNY","payer_currency":"CNY"}})";

std::int64_t now_s() { return static_cast<std::int64_t>(std::time(nullptr)); }

// `n` signed again with the PEM private key `key_file` under `serial`.
SignedNotification signed_by(SignedNotification n, const std::string& key_file, const std::string& serial) {
  const std::string message = n.headers["wechatpay-timestamp"] + "\n" + n.headers["wechatpay-nonce"] + "\n" + n.body + "\n";
  n.headers["wechatpay-signature"] = *payorch::providers::rsa_sha256_sign_base64(wechatpay_key(key_file), message);
  n.headers["wechatpay-serial"] = serial;
  return n;
}

}  // namespace

TEST_CASE("wechatpay reload: the next request is signed with the merchant key and serial published last") {
  WECHATPAY_EMULATOR_OR_RETURN();
  // Before the rotation the adapter holds a key and serial the emulator no longer accepts.
  WechatpayFixture f({}, "native", [](payorch::config::Provider& p) {
    p.options.private_key = wechatpay_key("other_private.pem");
    p.options.serial_no = "RETIRED0MERCHANT0SERIAL";
  });
  CHECK(f.submit(wechatpay_charge("before")).outcome == VendorOutcome::auth_refused);

  payorch::config::AdapterKeys keys = f.adapter_keys();
  keys.private_key = wechatpay_key("merchant_private.pem");
  keys.serial_no = payorch::test::wechatpay_merchant_serial;
  f.publish_adapter_keys(keys);
  const auto created = f.submit(wechatpay_charge("after"));
  CHECK_MESSAGE(created.outcome == VendorOutcome::pending, created.detail);

  // A key without its serial is still refused: the two go together.
  keys.serial_no = "RETIRED0MERCHANT0SERIAL";
  f.publish_adapter_keys(keys);
  CHECK(f.submit(wechatpay_charge("mixed")).outcome == VendorOutcome::auth_refused);
}

TEST_CASE("wechatpay reload: callbacks verify with the platform key and serial published last, the old ones refused") {
  WECHATPAY_EMULATOR_OR_RETURN();
  // The retiring platform key pair: merchant_private.pem / merchant_public.pem, serial RETIRED….
  const std::string retired_serial = "RETIRED0PLATFORM0SERIAL";
  WechatpayFixture f({}, "native", [&retired_serial](payorch::config::Provider& p) {
    p.options.platform_serial = retired_serial;
    p.options.platform_public_key = wechatpay_key("merchant_public.pem");
  });
  auto& adapter = f.adapter();
  const SignedNotification fresh = notification_from_library("TRANSACTION.SUCCESS", paid_resource);
  const SignedNotification old = signed_by(fresh, "merchant_private.pem", retired_serial);
  CHECK(adapter.verify_and_parse(old.headers, old.body, now_s()).verified);
  CHECK(adapter.verify_and_parse(fresh.headers, fresh.body, now_s()).error == CallbackError::bad_signature);

  payorch::config::AdapterKeys keys = f.adapter_keys();
  keys.platform_serial = payorch::test::wechatpay_platform_serial;
  keys.platform_public_key = wechatpay_key("platform_public.pem");
  f.publish_adapter_keys(keys);
  const auto now_verified = adapter.verify_and_parse(fresh.headers, fresh.body, now_s());
  CHECK_MESSAGE(now_verified.verified, now_verified.detail);
  CHECK(adapter.verify_and_parse(old.headers, old.body, now_s()).error == CallbackError::bad_signature);
  // The old key under the new serial: the signature itself is refused.
  const SignedNotification old_key = signed_by(fresh, "merchant_private.pem", payorch::test::wechatpay_platform_serial);
  CHECK(adapter.verify_and_parse(old_key.headers, old_key.body, now_s()).error == CallbackError::bad_signature);
  // The emulator's answers are believed under the new platform key too.
  CHECK(f.submit(wechatpay_charge("answer")).outcome == VendorOutcome::pending);
}
