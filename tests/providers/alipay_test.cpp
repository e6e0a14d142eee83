// providers/alipay follows a reload (SIGHUP) of its keys: the app private key published last
// signs the next request, and notifications and answers verify with the Alipay public key
// published last, the previous one refused.
#include <doctest/doctest.h>

#include <string>

#include "providers/alipay/gateway.h"
#include "providers/alipay_fixture.h"
#include "providers/rsa_sha256.h"

namespace {

using payorch::VendorOutcome;
using payorch::providers::CallbackError;
using payorch::test::alipay_charge;
using payorch::test::alipay_key;
using payorch::test::AlipayFixture;
using payorch::test::AlipayFixtureOptions;
namespace alipay = payorch::providers::alipay;

std::string notification() {
  return payorch::test::sign_with_alipay_sdk(
      R"({"notify_time":"2026-12-03 10:00:00","notify_type":"trade_status_sync","notify_id":"ntf_reload_1",)"
      R"("app_id":"2021000000000001","charset":"utf-8","version":"1.0","sign_type":"RSA2",)"
      R"("trade_no":"2026120322001000000000000001","out_trade_no":"ck_reload_1","total_amount":"12.34",)"
      R"("trade_status":"TRADE_SUCCESS"})");
}

// `body` signed again with the PEM private key `key_file`.
std::string signed_by(const std::string& body, const std::string& key_file) {
  alipay::Params params = *alipay::form_decode(body);
  params["sign"] = *payorch::providers::rsa_sha256_sign_base64(alipay_key(key_file),
                                                               alipay::signing_content(params, true));
  return alipay::form_encode(params);
}

}  // namespace

TEST_CASE("alipay reload: the next request is signed with the app private key published last") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  AlipayFixture f({.app_private_key = "alipay_private.pem"});  // a key the gateway does not know
  const auto refused = f.submit(alipay_charge("ck_reload_before"));
  CHECK_MESSAGE(refused.outcome == VendorOutcome::auth_refused, refused.detail);

  payorch::config::AdapterKeys keys = f.adapter_keys();
  keys.private_key = alipay_key("app_private.pem");
  f.publish_adapter_keys(keys);
  const auto paid = f.submit(alipay_charge("ck_reload_after"));
  CHECK_MESSAGE(paid.outcome == VendorOutcome::succeeded, paid.detail);
  CHECK(f.emulator().ledger().at("trades").as_array().size() == 1);
}

TEST_CASE("alipay reload: notifications and answers verify with the Alipay key published last, the old one refused") {
  PAYORCH_NEED_ALIPAY_EMULATOR();
  // The retiring Alipay key pair: app_private.pem / app_public.pem.
  AlipayFixture f({.alipay_public_key = "app_public.pem"});
  auto& adapter = f.adapter();
  const std::string fresh = notification();
  const std::string old = signed_by(fresh, "app_private.pem");
  CHECK(adapter.verify_and_parse({}, old, 0).verified);
  CHECK(adapter.verify_and_parse({}, fresh, 0).error == CallbackError::bad_signature);
  CHECK(f.submit(alipay_charge("ck_reload_old_key")).outcome == VendorOutcome::ambiguous);

  payorch::config::AdapterKeys keys = f.adapter_keys();
  keys.alipay_public_key = alipay_key("alipay_public.pem");
  f.publish_adapter_keys(keys);
  const auto now_verified = adapter.verify_and_parse({}, fresh, 0);
  CHECK_MESSAGE(now_verified.verified, now_verified.detail);
  CHECK(adapter.verify_and_parse({}, old, 0).error == CallbackError::bad_signature);
  CHECK(f.submit(alipay_charge("ck_reload_new_key")).outcome == VendorOutcome::succeeded);
}
