// providers[].preset (docs/vendors.md): a file of a vendor's documented contract values, read
// before the entry (which overrides it), every vendor fact citing its public page, and the
// retention guard checked on what results.
#include <doctest/doctest.h>

#include <string>

#include "config/config.h"
#include "config/config_fixture.h"
#include "support/alipay_emulator.h"
#include "support/process.h"

namespace payorch::config {

using namespace payorch::test;

namespace {

// A preset for the sim adapter, replaying, with every fact cited.
const std::string cited_preset = R"(adapter: sim
contract:
  key_retention: 24h
  recovery: replay
callback:
  retry_horizon: 2d
retry:
  give_up_after: 10h
sources:
  contract.key_retention: {page: https://vendor.test/idempotency, checked: 2026-12-02}
  contract.recovery: {page: https://vendor.test/idempotency, checked: 2026-12-02}
  callback.retry_horizon: {page: https://vendor.test/webhooks, checked: 2026-12-02, says: "two days"}
)";

// valid_yaml's sim entry without its contract and give_up_after, naming `preset.yaml`.
std::string entry_with_preset() {
  std::string yaml = edit(valid_yaml, "    adapter: sim\n", "    adapter: sim\n    preset: preset.yaml\n");
  yaml = edit(yaml, "    contract:\n      key_retention: 24h\n      recovery: lookup\n      not_found_final_after: 30s\n", "");
  yaml = edit(yaml, "      retry_horizon: 24h\n", "");
  return edit(yaml, "      give_up_after: 1h\n", "");
}

// Loads `config` with `preset` beside it; the errors, or none.
std::string load_errors(const std::string& config, const std::string& preset) {
  TempDir dir("payorch-preset");
  dir.write("preset.yaml", preset);
  const std::string path = dir.write("payorchd.yaml", config);
  try {
    load(path);
    return "";
  } catch (const ConfigError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("config: a preset gives the contract; the entry's own values override it") {
  TempDir dir("payorch-preset");
  dir.write("preset.yaml", cited_preset);
  const Config c = load(dir.write("payorchd.yaml", entry_with_preset()));
  const Provider& p = c.providers.at(0);
  CHECK(p.contract.key_retention == std::chrono::hours(24));
  CHECK(p.contract.recovery == RecoveryMode::replay);
  CHECK(p.contract.give_up_after == std::chrono::hours(10));
  CHECK(p.callback.retry_horizon == std::chrono::hours(48));
  CHECK(p.callback.tolerance == std::chrono::minutes(5));  // the entry's

  const Config o = load(dir.write(
      "override.yaml", edit(entry_with_preset(), "      max_backoff: 1m\n",
                            "      max_backoff: 1m\n      give_up_after: 2h\n")));
  CHECK(o.providers.at(0).contract.give_up_after == std::chrono::hours(2));
  CHECK(o.providers.at(0).contract.recovery == RecoveryMode::replay);
}

TEST_CASE("config: without a preset the contract stays required") {
  std::string yaml = edit(entry_with_preset(), "    preset: preset.yaml\n", "");
  CHECK(load_errors(yaml, cited_preset).find("providers[0].contract: missing required key") !=
        std::string::npos);
}

TEST_CASE("config: every vendor fact of a preset cites its page, at the preset's own line") {
  const std::string uncited = edit(cited_preset,
      "  contract.recovery: {page: https://vendor.test/idempotency, checked: 2026-12-02}\n", "");
  const std::string errors = load_errors(entry_with_preset(), uncited);
  CHECK_MESSAGE(errors.find("preset.yaml:4:13: contract.recovery: a preset value needs its source") !=
                    std::string::npos,
                errors);

  const std::string undated = edit(cited_preset, "webhooks, checked: 2026-12-02", "webhooks, checked: last week");
  CHECK(load_errors(entry_with_preset(), undated).find(
            "preset.yaml:12:73: sources.callback.retry_horizon.checked: expected the date it was "
            "checked as YYYY-MM-DD") != std::string::npos);

  const std::string plain_http = edit(cited_preset, "https://vendor.test/webhooks", "http://vendor.test/webhooks");
  CHECK(load_errors(entry_with_preset(), plain_http).find("sources.callback.retry_horizon.page: expected an https:// URL") !=
        std::string::npos);

  const std::string stray = cited_preset +
      "  contract.not_found_final_after: {page: https://vendor.test/search, checked: 2026-12-02}\n";
  CHECK(load_errors(entry_with_preset(), stray).find(
            "sources.contract.not_found_final_after: cites a value the preset does not set") !=
        std::string::npos);

  const std::string unknown = cited_preset + "risk: {max_unknown_count: 5}\n";
  CHECK(load_errors(entry_with_preset(), unknown).find("preset.yaml:13:1: risk: unknown key 'risk'") !=
        std::string::npos);
}

TEST_CASE("config: the retention guard holds on the preset's values merged with the entry's") {
  // The preset's 24h key retention with the entry's 22h give_up_after: a late replay would
  // charge twice.
  const std::string yaml = edit(entry_with_preset(), "      max_backoff: 1m\n",
                                "      max_backoff: 1m\n      give_up_after: 22h\n");
  const std::string errors = load_errors(yaml, cited_preset);
  CHECK_MESSAGE(errors.find("retry.give_up_after (22h) + timeouts.request (10s) + engine.lease (30s)") !=
                    std::string::npos,
                errors);
  CHECK(errors.find("(values of the preset") != std::string::npos);

  // A preset whose own give_up_after breaks the guard is refused the same way.
  const std::string greedy = edit(cited_preset, "give_up_after: 10h", "give_up_after: 23h");
  CHECK(load_errors(entry_with_preset(), greedy).find("retry.give_up_after (23h)") != std::string::npos);
}

TEST_CASE("config: a preset for another adapter, or one that cannot be read, is refused") {
  CHECK(load_errors(entry_with_preset(), edit(cited_preset, "adapter: sim", "adapter: stripe"))
            .find("providers[0].preset: the preset") != std::string::npos);
  CHECK(load_errors(edit(entry_with_preset(), "preset: preset.yaml", "preset: missing.yaml"), cited_preset)
            .find("providers[0].preset: cannot read") != std::string::npos);
  CHECK(load_errors(entry_with_preset(), "contract: [1, 2\n").find("preset.yaml") != std::string::npos);
}

TEST_CASE("config: the shipped presets load, cite every vendor fact, and hold the retention guard") {
  struct Shipped {
    std::string adapter;
    std::string options;
    Millis key_retention;
    Millis retry_horizon;
  };
  const Shipped shipped[] = {
      {"stripe", "", std::chrono::hours(24), std::chrono::hours(72)},
      {"adyen", "    options: {merchant_account: PayorchTest}\n", std::chrono::hours(24 * 7),
       std::chrono::hours(24 * 30)},
  };
  for (const Shipped& v : shipped) {
    CAPTURE(v.adapter);
    const std::string preset = std::string(PAYORCH_SOURCE_DIR) + "/conf/providers/" + v.adapter + ".yaml";
    std::string yaml = edit(entry_with_preset(), "    adapter: sim\n    preset: preset.yaml\n",
                            "    adapter: " + v.adapter + "\n    preset: " + preset + "\n" + v.options);
    TempDir dir("payorch-preset");
    const Config c = load(dir.write("payorchd.yaml", yaml));
    const Provider& p = c.providers.at(0);
    CHECK(p.contract.key_retention == v.key_retention);
    CHECK(p.contract.recovery == RecoveryMode::replay);
    CHECK_FALSE(p.contract.not_found_final_after.has_value());
    CHECK(p.callback.retry_horizon == v.retry_horizon);
    // The guard binds: a budget past 0.9 x key_retention is refused with the preset's values.
    const std::string greedy = edit(yaml, "      max_backoff: 1m\n",
                                    "      max_backoff: 1m\n      give_up_after: " +
                                        std::to_string(v.key_retention.count() / 60'000) + "m\n");
    CHECK_THROWS_WITH_AS(load(dir.write("greedy.yaml", greedy)),
                         doctest::Contains("exceeds 0.9 x contract.key_retention"), ConfigError);
  }
}

TEST_CASE("config: the shipped alipay preset loads: lookup recovery, not_found never final, a close fence") {
  const std::string preset = std::string(PAYORCH_SOURCE_DIR) + "/conf/providers/alipay.yaml";
  const std::string options = "    options:\n      app_id: \"2021000000000001\"\n      private_key_file: " +
                              payorch::test::alipay_key_path("app_private.pem") +
                              "\n      alipay_public_key_file: " + payorch::test::alipay_key_path("alipay_public.pem") +
                              "\n      product: pay\n      notify_url: https://payorch.example/v1/callbacks/alipay\n";
  // Alipay takes its keys from options: no api_key, no callback secret or tolerance.
  std::string yaml = edit(entry_with_preset(), "    adapter: sim\n    preset: preset.yaml\n",
                          "    adapter: alipay\n    preset: " + preset + "\n" + options);
  yaml = edit(yaml, "    api_key: sim-api-key-0001\n", "");
  yaml = edit(yaml, "    callback:\n      secret: sim-callback-secret\n      tolerance: 5m\n", "");
  TempDir dir("payorch-preset");
  const Config c = load(dir.write("payorchd.yaml", yaml));
  const Provider& p = c.providers.at(0);
  CHECK(p.contract.key_retention == std::chrono::hours(24 * 90));
  CHECK(p.contract.recovery == RecoveryMode::lookup);
  CHECK_FALSE(p.contract.not_found_final_after.has_value());
  CHECK(p.contract.close_not_before == Millis(0));
  CHECK(p.contract.confirmed_close);
  CHECK(p.callback.retry_horizon == std::chrono::hours(25));
  CHECK(p.options.product == "pay");
  CHECK(p.options.private_key.find("BEGIN PRIVATE KEY") != std::string::npos);
  // A bar code is charged at once: the order exists once Alipay answered.
  CHECK_FALSE(p.contract.order_expiry.has_value());
  // A refused close is followed by a query: the lease holds two requests (30s >= 2 x 14s + 2s).
  CHECK(p.contract.requests_per_call == 2);
  CHECK(p.contract.call_time() == std::chrono::seconds(20));
  CHECK(load(dir.write("fits.yaml", edit(yaml, "request: 10s", "request: 14s"))).providers.size() == 1);
  CHECK_THROWS_WITH_AS(load(dir.write("too-long.yaml", edit(yaml, "request: 10s", "request: 15s"))),
                       doctest::Contains("engine.lease (30s) must be at least the vendor request timeout "
                                         "(15s) x 2 (the alipay adapter makes up to 2 requests in one call)"),
                       ConfigError);

  // A QR code is an order only once scanned: its expiry (two hours unless set) bounds when
  // "no such order" can be believed.
  const std::string qr = edit(yaml, "      product: pay\n", "      product: precreate\n");
  const Config precreate = load(dir.write("precreate.yaml", qr));
  CHECK(precreate.providers.at(0).contract.order_expiry == std::chrono::hours(2));
  const std::string half_hour = edit(qr, "      product: precreate\n", "      product: precreate\n      order_expiry: 30m\n");
  CHECK(load(dir.write("half-hour.yaml", half_hour)).providers.at(0).contract.order_expiry == std::chrono::minutes(30));
  for (const char* bad : {"90s", "16d", "61s"}) {
    CAPTURE(bad);
    const std::string y = edit(qr, "      product: precreate\n", std::string("      product: precreate\n      order_expiry: ") + bad + "\n");
    CHECK_THROWS_WITH_AS(load(dir.write("bad-expiry.yaml", y)), doctest::Contains("whole minutes from 1m to 15d"),
                         ConfigError);
  }
  const std::string on_pay = edit(yaml, "      product: pay\n", "      product: pay\n      order_expiry: 30m\n");
  CHECK_THROWS_WITH_AS(load(dir.write("pay-expiry.yaml", on_pay)), doctest::Contains("only product precreate"),
                       ConfigError);
}

TEST_CASE("config: the shipped wechatpay preset loads with its options, cites every fact, and holds the guard") {
  const std::string yaml = with_wechatpay("MERCHANT0SERIAL0TEST", "merchant_private.pem",
                                          "PLATFORM0SERIAL0TEST", "platform_public.pem");
  TempDir dir("payorch-preset");
  const Config c = load(dir.write("payorchd.yaml", yaml));
  const Provider& p = c.providers.at(0);
  CHECK(p.adapter == "wechatpay");
  CHECK(p.base_url == "https://api.mch.weixin.qq.com");
  CHECK(p.contract.key_retention == std::chrono::hours(24 * 365));
  CHECK(p.contract.recovery == RecoveryMode::lookup);
  CHECK(p.contract.not_found_final_after == std::chrono::minutes(10));
  CHECK(p.contract.close_not_before == std::chrono::minutes(5));
  CHECK(p.contract.confirmed_close);
  CHECK(p.callback.retry_horizon == std::chrono::hours(25));
  CHECK(p.options.api_v3_key.size() == 32);
  CHECK(p.options.product == "native");
  // The guard binds with the preset's year of retention.
  const std::string greedy = edit(yaml, "      max_backoff: 1m\n", "      max_backoff: 1m\n      give_up_after: 365d\n");
  CHECK_THROWS_WITH_AS(load(dir.write("greedy.yaml", greedy)), doctest::Contains("exceeds 0.9 x contract.key_retention"),
                       ConfigError);
  // codepay has no close: no confirmed close for it.
  const Config codepay = load(dir.write("codepay.yaml", edit(yaml, "      product: native\n", "      product: codepay\n")));
  CHECK_FALSE(codepay.providers.at(0).contract.confirmed_close);
}

}  // namespace payorch::config
