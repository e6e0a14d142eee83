// providers.cpp: providers[] — names, adapters, URLs, contracts, retry and risk bounds — and
// the startup safety checks of docs/contract.md §3/§5 that refuse a contract under which a retry
// could charge twice.
#include <doctest/doctest.h>

#include <string>

#include "config/config.h"
#include "config/config_fixture.h"

namespace payorch::config {

using namespace payorch::test;

TEST_CASE("config: provider names") {
  check_edits({
      {"- name: sim", "- name: my sim", "name: my sim",
       "providers[0].name: provider names are 1-64 characters of [a-z0-9_-]"},
  });
}

TEST_CASE("config: values outside their set (providers)") {
  check_edits({
      {"adapter: sim", "adapter: paypal", "adapter:",
       "providers[0].adapter: unknown adapter \"paypal\"; known adapters: sim, stripe, adyen"},
      {"recovery: lookup", "recovery: query", "recovery:",
       "providers[0].contract.recovery: expected lookup, replay or none, got \"query\""},
      {"base_url: http://127.0.0.1:8090/", "base_url: ftp://vendor.test", "base_url:",
       "providers[0].base_url: expected an http:// or https:// URL"},
      {"base_url: http://127.0.0.1:8090/", "base_url: 127.0.0.1:8090", "base_url:",
       "providers[0].base_url: expected an http:// or https:// URL"},
      {"base_url: http://127.0.0.1:8090/", "base_url: http://vendor.test/?a=1", "base_url:",
       "providers[0].base_url: expected an http:// or https:// URL without query"},
  });
}

TEST_CASE("config: providers[].options takes only the adapter's own names") {
  // sim takes no options: any name is unknown, with its line.
  check_edits({
      {"adapter: sim", "adapter: sim\n    options: {merchant_account: Acme}", "options:",
       "providers[0].options.merchant_account: unknown key 'merchant_account'; this mapping takes "
       "no keys here"},
  });
  CHECK(errors_of(edit(valid_yaml, "adapter: sim", "adapter: sim\n    options: {}")).empty());
}

TEST_CASE("config: adapter stripe is known and takes no options (docs/contract.md §9)") {
  const std::string stripe = edit(edit(valid_yaml, "adapter: sim", "adapter: stripe"),
                                  "recovery: lookup", "recovery: replay");
  CHECK(errors_of(stripe).empty());
  check_error(edit(stripe, "adapter: stripe", "adapter: stripe\n    options: {merchant_account: Acme}"),
              "options:",
              "providers[0].options.merchant_account: unknown key 'merchant_account'; this mapping "
              "takes no keys here");
}

TEST_CASE("config: adapter adyen requires options.merchant_account") {
  const std::string adyen = edit(edit(valid_yaml, "adapter: sim", "adapter: adyen\n    options: {merchant_account: Acme}"),
                                 "recovery: lookup", "recovery: replay");
  CHECK(errors_of(adyen).empty());
  check_error(edit(adyen, "options: {merchant_account: Acme}", "options: {}"), "options:",
              "providers[0].options.merchant_account: missing required key");
  check_error(edit(adyen, "options: {merchant_account: Acme}", "options: {merchant: Acme}"), "options:",
              "providers[0].options.merchant: unknown key 'merchant'");
}

TEST_CASE("config: stripe and adyen default to the vendors' documented hosts; sim needs base_url") {
  std::string yaml = edit(valid_yaml, "    base_url: http://127.0.0.1:8090/\n", "");
  yaml = edit(yaml, "recovery: lookup", "recovery: replay");
  const Config stripe = load_ok(edit(yaml, "adapter: sim", "adapter: stripe"));
  CHECK(stripe.providers.at(0).base_url == "https://api.stripe.com");
  const Config adyen =
      load_ok(edit(yaml, "adapter: sim", "adapter: adyen\n    options: {merchant_account: Acme}"));
  CHECK(adyen.providers.at(0).base_url == "https://checkout-test.adyen.com/v71");
  const Config own = load_ok(edit(edit(valid_yaml, "adapter: sim", "adapter: stripe"), "recovery: lookup",
                                  "recovery: replay"));
  CHECK(own.providers.at(0).base_url == "http://127.0.0.1:8090");
  CHECK(has_error(errors_of(yaml), "", "providers[0].base_url: missing required key"));
}

TEST_CASE("config: adapters without a lookup by reference refuse recovery: lookup") {
  for (const char* adapter : {"stripe", "adyen"}) {
    CAPTURE(std::string(adapter));
    const std::string yaml = edit(valid_yaml, "adapter: sim",
                                  std::string("adapter: ") + adapter + "\n    options: {merchant_account: Acme}");
    std::string fixed = yaml;
    if (std::string(adapter) == "stripe") fixed = edit(yaml, "\n    options: {merchant_account: Acme}", "");
    check_error(fixed, "recovery: lookup",
                std::string("providers[0].contract.recovery: the ") + adapter +
                    " adapter cannot look a payment up by reference: use replay (or none)");
  }
}

TEST_CASE("config: numeric bounds (providers)") {
  check_edits({
      {"max_attempts: 10", "max_attempts: 0", "max_attempts",
       "providers[0].retry.max_attempts: must be at least 1, got 0"},
      {"initial_backoff: 1s", "initial_backoff: 2m", "initial_backoff",
       "providers[0].retry.initial_backoff: initial_backoff (2m) must not exceed max_backoff (1m)"},
      {"max_unknown_count: 100", "max_unknown_count: -1", "max_unknown_count",
       "providers[0].risk.max_unknown_count: must be at least 0, got -1"},
      {"max_unknown_amount_minor: 10000000", "max_unknown_amount_minor: -5",
       "max_unknown_amount_minor", "providers[0].risk.max_unknown_amount_minor: must be at least 0"},
      {"max_unknown_count: 100", "max_unknown_count: 99999999999999999999", "max_unknown_count",
       "providers[0].risk.max_unknown_count: must be at most"},
  });
  CHECK(errors_of(edit(valid_yaml, "max_unknown_count: 100", "max_unknown_count: 0")).empty());
}

TEST_CASE("config: the retry window must end well inside the vendor's key retention") {
  // replay: 20h + 10s + 30s > 0.9 x 22h = 19h48m.
  std::string yaml = edit(valid_yaml, "recovery: lookup", "recovery: replay");
  yaml = edit(yaml, "key_retention: 24h", "key_retention: 22h");
  yaml = edit(yaml, "give_up_after: 1h", "give_up_after: 20h");
  check_error(
      yaml, "give_up_after",
      "providers[0].retry.give_up_after: retry.give_up_after (20h) + timeouts.request (10s) "
      "+ engine.lease (30s) = 20h40s exceeds 0.9 x contract.key_retention (22h) = 19h48m");

  // lookup with a finite not_found_final_after resubmits too; with `never` it does not.
  const std::string lookup = edit(edit(valid_yaml, "key_retention: 24h", "key_retention: 1h"),
                                  "give_up_after: 1h", "give_up_after: 55m");
  check_error(lookup, "give_up_after",
              "providers[0].retry.give_up_after: retry.give_up_after (55m)");
  CHECK(errors_of(edit(lookup, "not_found_final_after: 30s", "not_found_final_after: never"))
            .empty());
  CHECK(errors_of(edit(lookup, "recovery: lookup", "recovery: none")).empty());

  // Exactly 0.9 x key_retention is allowed: 32360s + 10s + 30s = 9h = 0.9 x 10h.
  const std::string edge = edit(edit(valid_yaml, "key_retention: 24h", "key_retention: 10h"),
                                "give_up_after: 1h", "give_up_after: 32360s");
  CHECK(errors_of(edge).empty());
  check_error(edit(edge, "give_up_after: 32360s", "give_up_after: 32361s"), "give_up_after",
              "exceeds 0.9 x contract.key_retention (10h) = 9h");
}

TEST_CASE("config: the lease must outlast the vendor request timeout by a margin for the claim") {
  // The margin is the larger of 1s and timeouts.connect (2s here): lease 30s allows request 28s.
  check_error(edit(valid_yaml, "request: 10s", "request: 30s"), "request: 30s",
              "providers[0].timeouts.request: engine.lease (30s) must be at least the vendor "
              "request timeout (30s) + a margin of 2s");
  check_error(edit(valid_yaml, "request: 10s", "request: 29s"), "request: 29s",
              "engine.lease (30s) must be at least the vendor request timeout (29s) + a margin of 2s");
  CHECK(errors_of(edit(valid_yaml, "request: 10s", "request: 28s")).empty());
  // A connect timeout under a second still leaves a second for the claim.
  const std::string quick_connect = edit(valid_yaml, "connect: 2s", "connect: 200ms");
  CHECK(errors_of(edit(quick_connect, "request: 10s", "request: 29s")).empty());
  check_error(edit(quick_connect, "request: 10s", "request: 29500ms"), "request: 29500ms",
              "a margin of 1s");
  // Without a timeouts section the default request timeout is checked, at the provider.
  const std::string yaml =
      edit(edit(valid_yaml, "    timeouts:\n      connect: 2s\n      request: 10s\n", ""),
           "lease: 30s", "lease: 5s");
  check_error(yaml, "- name: sim",
              "providers[0].timeouts.request: engine.lease (5s) must be at least");
  // A bad lease is reported once, not again by every provider's check.
  CHECK(errors_of(edit(valid_yaml, "lease: 30s", "lease: 0s")).size() == 1);
}

}  // namespace payorch::config
