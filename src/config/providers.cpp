// providers[]: each vendor's connection, contract (docs/contract.md §5) and the startup checks that refuse
// a contract under which a retry could charge twice.
#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "config/sections.h"
#include "core/decide.h"
#include "core/names.h"

namespace payorch::config::detail {
namespace {

constexpr std::array<std::string_view, 5> known_adapters{"sim", "stripe", "adyen", "wechatpay",
                                                         "alipay"};

// The adapters that take every key from providers[].options (docs/contract.md §9): no api_key,
// no callback.secret.
bool keys_in_options(std::string_view adapter) { return adapter == "wechatpay" || adapter == "alipay"; }

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

// Returns whether the name is valid.
bool read_identity(const Section& p, Provider& out) {
  Reader& r = p.reader();
  bool name_ok = p.text("name", out.name, true);
  if (name_ok && !is_name(out.name)) {
    r.error(p.mark_of("name"), p.path_of("name"),
            "provider names are 1-64 characters of [a-z0-9_-], got \"" + out.name + "\"");
    name_ok = false;
  }
  if (p.text("adapter", out.adapter, true) &&
      std::find(known_adapters.begin(), known_adapters.end(), out.adapter) == known_adapters.end())
    r.error(p.mark_of("adapter"), p.path_of("adapter"),
            "unknown adapter \"" + out.adapter +
                "\"; known adapters: sim, stripe, adyen, wechatpay, alipay");
  // The vendors' documented hosts are the defaults: Stripe's API (https://docs.stripe.com/api),
  // and Adyen's Checkout test environment (the `servers` entry of CheckoutService-v71.json;
  // live Checkout URLs carry the merchant's own prefix, so a live provider names its base_url).
  if (out.adapter == "stripe") out.base_url = "https://api.stripe.com";
  if (out.adapter == "adyen") out.base_url = "https://checkout-test.adyen.com/v71";
  // WeChat Pay API v3's host (https://pay.weixin.qq.com/doc/v3/merchant/4012081606) and
  // Alipay's OpenAPI gateway (https://opendocs.alipay.com/common/02kf5q).
  if (out.adapter == "wechatpay") out.base_url = "https://api.mch.weixin.qq.com";
  if (out.adapter == "alipay") out.base_url = "https://openapi.alipay.com/gateway.do";
  if (p.text("base_url", out.base_url, out.base_url.empty()) && p.find("base_url")) {
    if (!is_http_url(out.base_url) || out.base_url.find_first_of("?#") != std::string::npos)
      r.error(p.mark_of("base_url"), p.path_of("base_url"),
              "expected an http:// or https:// URL without query or fragment, got \"" +
                  out.base_url + "\"");
    while (out.base_url.ends_with('/')) out.base_url.pop_back();
  }
  if (keys_in_options(out.adapter)) {
    for (std::string_view key : {"api_key", "api_key_file"})
      if (p.find(key))
        r.error(p.mark_of(key), p.path_of(key),
                "the " + out.adapter + " adapter takes its keys from options, not " + std::string(key));
  } else if (std::optional<Secret> key = p.secret("api_key", true)) {
    if (!is_visible_ascii(key->value))
      r.error(key->field->mark(), key->field->path,
              "must be printable ASCII without spaces (it is sent in an HTTP header)");
    out.api_key = std::move(key->value);
  }
  return name_ok;
}

// Each returns whether every value it read was valid, so the safety checks below run only on
// values the operator actually gave (or left to their defaults).
bool read_timeouts(const Section& s, Timeouts& out, Contract& contract) {
  const bool connect_ok = s.duration("connect", out.connect);
  return s.duration("request", contract.request_timeout) && connect_ok && s.ok();
}

// key_retention and recovery are required unless a preset gave them.
bool read_contract(const Section& s, Contract& out, bool need_retention = true,
                   bool need_recovery = true) {
  Reader& r = s.reader();
  bool ok = s.duration("key_retention", out.key_retention, need_retention);
  std::string recovery;
  if (!need_recovery && !s.find("recovery")) {
    // given by the preset
  } else if (s.text("recovery", recovery, true)) {
    if (const std::optional<RecoveryMode> mode = parse_recovery_mode(recovery)) {
      out.recovery = *mode;
    } else {
      r.error(s.mark_of("recovery"), s.path_of("recovery"),
              "expected lookup, replay or none, got \"" + recovery + "\"");
      ok = false;
    }
  } else {
    ok = false;
  }
  const bool close_ok = s.duration("close_not_before", out.close_not_before);
  return s.duration_or_never("not_found_final_after", out.not_found_final_after) && close_ok && ok &&
         s.ok();
}

// Returns whether give_up_after was valid.
bool read_retry(const Section& s, Contract& out) {
  s.integer("max_attempts", out.max_attempts, 1, 1'000'000);
  const bool initial_ok = s.duration("initial_backoff", out.initial_backoff);
  const bool max_ok = s.duration("max_backoff", out.max_backoff);
  if (initial_ok && max_ok && out.initial_backoff > out.max_backoff)
    s.reader().error(s.mark_of("initial_backoff"), s.path_of("initial_backoff"),
                     "initial_backoff (" + format_duration(out.initial_backoff) +
                         ") must not exceed max_backoff (" + format_duration(out.max_backoff) +
                         ")");
  return s.duration("give_up_after", out.give_up_after) && s.ok();
}

void read_risk(const Section& p, RiskCap& out) {
  const Section s = p.section("risk", {"max_unknown_count", "max_unknown_amount_minor"}, false);
  s.integer("max_unknown_count", out.max_unknown_count, 0, int64_max);
  s.integer("max_unknown_amount_minor", out.max_unknown_amount_minor, 0, int64_max);
}

// The vendor's timings of callbacks; an entry's `callback` adds the secret.
bool read_callback_timing(const Section& s, Callback& out) {
  const bool tolerance_ok = s.duration("tolerance", out.tolerance);
  return s.duration("retry_horizon", out.retry_horizon) && tolerance_ok;
}

void read_callback(const Section& p, Callback& out, std::string_view adapter) {
  if (keys_in_options(adapter)) {
    // Callbacks are verified with keys from options; only the timings apply here.
    read_callback_timing(p.section("callback", {"tolerance", "retry_horizon"}, false), out);
    return;
  }
  const Section s =
      p.section("callback", {"secret", "secret_file", "tolerance", "retry_horizon"}, true);
  if (std::optional<Secret> secret = s.secret("secret", true))
    out.secret = std::move(secret->value);
  read_callback_timing(s, out);
}

// --- presets (docs/vendors.md) -----------------------------------------------------------------

// The values of a preset that are facts about the vendor, each of which must cite the public
// page it comes from (sources.<value>: {page, checked}); retry and timeouts are payorch's own
// choices, kept inside the vendor's facts by check_safety.
constexpr std::array<std::string_view, 6> vendor_facts{
    "contract.key_retention", "contract.recovery", "contract.not_found_final_after",
    "contract.close_not_before", "callback.tolerance", "callback.retry_horizon"};

bool is_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// Every vendor fact the preset sets names its page (https) and the day it was checked, and
// every source names a value the preset sets.
void check_sources(const Section& top, const Section& contract, const Section& callback) {
  const Section sources = top.section(
      "sources",
      {"contract.key_retention", "contract.recovery", "contract.not_found_final_after",
       "contract.close_not_before", "callback.tolerance", "callback.retry_horizon"},
      false);
  Reader& r = top.reader();
  for (std::string_view fact : vendor_facts) {
    const std::size_t dot = fact.find('.');
    const Section& owner = fact.starts_with("contract") ? contract : callback;
    const bool set = owner.find(fact.substr(dot + 1)) != nullptr;
    if (!set) {
      if (sources.find(fact))
        r.error(sources.mark_of(fact), sources.path_of(fact),
                "cites a value the preset does not set");
      continue;
    }
    if (!sources.find(fact)) {
      r.error(owner.mark_of(fact.substr(dot + 1)), owner.path_of(fact.substr(dot + 1)),
              "a preset value needs its source: add sources." + std::string(fact) +
                  " {page: <the vendor's public page>, checked: YYYY-MM-DD}");
      continue;
    }
    const Section cite = sources.section(fact, {"page", "checked", "says"}, true);
    std::string page, checked, says;
    if (cite.text("page", page, true) && !page.starts_with("https://"))
      r.error(cite.mark_of("page"), cite.path_of("page"), "expected an https:// URL, got \"" + page + "\"");
    if (cite.text("checked", checked, true) && !is_date(checked))
      r.error(cite.mark_of("checked"), cite.path_of("checked"),
              "expected the date it was checked as YYYY-MM-DD, got \"" + checked + "\"");
    cite.text("says", says, false);
  }
}

struct PresetRead {
  bool given = false;
  bool ok = true;                // the preset was read without errors
  bool key_retention = false;    // it set contract.key_retention
  bool recovery = false;         // it set contract.recovery
  std::string file;              // as shown in messages
};

// providers[].preset: a file of documented values for this adapter (conf/providers/*.yaml),
// read first with its own name and lines in any error; the entry's own values override it.
PresetRead read_preset(const Section& p, Provider& v) {
  PresetRead out;
  std::string given;
  if (!p.find("preset") || !p.text("preset", given, false)) return out;
  out.given = true;
  out.ok = false;
  Reader& r = p.reader();
  std::string problem;
  const std::optional<std::filesystem::path> path = r.resolve(given, problem);
  if (!path) {
    r.error(p.mark_of("preset"), p.path_of("preset"), problem);
    return out;
  }
  out.file = path->lexically_normal().string();
  std::string os_error;
  const std::optional<std::string> text = read_whole_file(*path, os_error);
  if (!text) {
    r.error(p.mark_of("preset"), p.path_of("preset"), "cannot read " + out.file + ": " + os_error);
    return out;
  }
  Reader preset(out.file, path->parent_path());
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    preset.error(e.mark, "YAML syntax error", e.msg);
  }
  if (!preset.failed() && !root.IsMap())
    preset.error(root.Mark(), "(top level)",
                 "a provider preset is a mapping (adapter, contract, callback, retry, timeouts, "
                 "sources)");
  if (!preset.failed()) {
    const Section top(preset, root, root.Mark(), "",
                      {"adapter", "contract", "callback", "retry", "timeouts", "sources"});
    std::string adapter;
    if (top.text("adapter", adapter, true) && !v.adapter.empty() && adapter != v.adapter)
      r.error(p.mark_of("preset"), p.path_of("preset"),
              "the preset " + out.file + " is for adapter \"" + adapter +
                  "\", this provider's adapter is \"" + v.adapter + "\"");
    const Section contract =
        top.section("contract", {"key_retention", "recovery", "not_found_final_after",
                                 "close_not_before"},
                    false);
    const Section callback = top.section("callback", {"tolerance", "retry_horizon"}, false);
    read_timeouts(top.section("timeouts", {"connect", "request"}, false), v.timeouts, v.contract);
    read_contract(contract, v.contract, false, false);
    read_retry(top.section("retry", {"max_attempts", "initial_backoff", "max_backoff",
                                     "give_up_after"},
                           false),
               v.contract);
    read_callback_timing(callback, v.callback);
    check_sources(top, contract, callback);
    out.key_retention = contract.find("key_retention") != nullptr;
    out.recovery = contract.find("recovery") != nullptr;
  }
  out.ok = !preset.failed();
  r.absorb(preset);
  return out;
}

// providers[].options: each adapter reads its own names (docs/contract.md §9); sim and stripe
// take none, so any option given to them is an unknown key.
// An RSA key in PEM, read from `key`_file: nullopt and an error when missing or unusable.
enum class KeyKind { private_key, public_key };
void read_rsa_key(const Section& s, std::string_view key, KeyKind kind, std::string& out) {
  std::optional<Secret> pem = s.secret(key, true);
  if (!pem) return;
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem->value.data(),
                                                                static_cast<int>(pem->value.size())),
                                                &BIO_free);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey(
      kind == KeyKind::private_key ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                                   : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr),
      &EVP_PKEY_free);
  if (!pkey || EVP_PKEY_base_id(pkey.get()) != EVP_PKEY_RSA) {
    s.reader().error(pem->field->mark(), pem->field->path,
                     kind == KeyKind::private_key
                         ? "expected an RSA private key in PEM (-----BEGIN PRIVATE KEY-----)"
                         : "expected an RSA public key in PEM (-----BEGIN PUBLIC KEY-----)");
    return;
  }
  out = std::move(pem->value);
}

void read_choice(const Section& s, std::string_view key, std::initializer_list<std::string_view> allowed,
                 std::string& out) {
  if (!s.text(key, out, true)) return;
  if (std::find(allowed.begin(), allowed.end(), out) != allowed.end()) return;
  std::string names;
  for (std::string_view a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
  s.reader().error(s.mark_of(key), s.path_of(key), "expected one of " + names + ", got \"" + out + "\"");
}

void read_notify_url(const Section& s, std::string& out) {
  if (s.text("notify_url", out, true) && !is_http_url(out))
    s.reader().error(s.mark_of("notify_url"), s.path_of("notify_url"),
                     "expected the http:// or https:// URL the vendor posts callbacks to, got \"" +
                         out + "\"");
}

// Alipay's qr_code_timeout_express / timeout_express: 1m..15d in whole minutes (docs/vendors.md);
// a QR code only (alipay.trade.pay charges the buyer's code at once).
void read_order_expiry(const Section& s, AdapterOptions& out) {
  if (!s.find("order_expiry")) return;
  if (out.product != "precreate") {
    s.reader().error(s.mark_of("order_expiry"), s.path_of("order_expiry"),
                     "only product precreate (a QR code the buyer pays later) takes order_expiry");
    return;
  }
  if (!s.duration("order_expiry", out.order_expiry)) return;
  constexpr Millis minute{60'000};
  if (out.order_expiry < minute || out.order_expiry > std::chrono::days(15) ||
      out.order_expiry % minute != Millis{0})
    s.reader().error(s.mark_of("order_expiry"), s.path_of("order_expiry"),
                     "Alipay takes whole minutes from 1m to 15d, got " +
                         format_duration(out.order_expiry));
}

void read_options(const Section& p, AdapterOptions& out, const std::string& adapter) {
  if (adapter == "adyen") {
    const Section s = p.section("options", {"merchant_account"}, true);
    s.text("merchant_account", out.merchant_account, true);
  } else if (adapter == "wechatpay") {
    const Section s = p.section("options",
                                {"mchid", "appid", "serial_no", "private_key_file", "platform_serial",
                                 "platform_public_key_file", "api_v3_key_file", "product",
                                 "notify_url"},
                                true);
    s.text("mchid", out.mchid, true);
    s.text("appid", out.appid, true);
    s.text("serial_no", out.serial_no, true);
    s.text("platform_serial", out.platform_serial, true);
    read_rsa_key(s, "private_key", KeyKind::private_key, out.private_key);
    read_rsa_key(s, "platform_public_key", KeyKind::public_key, out.platform_public_key);
    if (std::optional<Secret> key = s.secret("api_v3_key", true)) {
      if (key->value.size() != 32)
        s.reader().error(key->field->mark(), key->field->path,
                         "the APIv3 key is 32 bytes (AEAD_AES_256_GCM), got " +
                             std::to_string(key->value.size()));
      else
        out.api_v3_key = std::move(key->value);
    }
    read_choice(s, "product", {"codepay", "native", "jsapi"}, out.product);
    read_notify_url(s, out.notify_url);
  } else if (adapter == "alipay") {
    const Section s = p.section("options",
                                {"app_id", "private_key_file", "alipay_public_key_file", "product",
                                 "notify_url", "order_expiry"},
                                true);
    s.text("app_id", out.app_id, true);
    read_rsa_key(s, "private_key", KeyKind::private_key, out.private_key);
    read_rsa_key(s, "alipay_public_key", KeyKind::public_key, out.alipay_public_key);
    read_choice(s, "product", {"pay", "precreate"}, out.product);
    read_notify_url(s, out.notify_url);
    read_order_expiry(s, out);
  } else {
    p.section("options", {}, false);
  }
}

// docs/contract.md §3/§5. Both are about a request that may still be on the wire when someone else acts.
void check_safety(const Section& timeouts, const Section& retry, const Provider& v, Millis lease,
                  const PresetRead& preset) {
  Reader& r = timeouts.reader();
  const Contract& c = v.contract;
  // The lease is taken when the claim begins; the request's own clock starts only after the
  // claim has committed and the call is dispatched. The margin is room for those two steps:
  // at least 1 s, and no less than the connect timeout. (The engine also refuses to send a
  // call whose request timeout no longer fits in what is left of its lease; the margin makes
  // that rare.)
  // A call of an adapter that makes two requests in a row (Contract::requests_per_call) needs
  // room for both.
  const Millis margin = std::max(Millis(1'000), v.timeouts.connect);
  if (lease < c.call_time() + margin)
    r.error(timeouts.mark_of("request"), timeouts.path_of("request"),
            "engine.lease (" + format_duration(lease) + ") must be at least the vendor request timeout (" +
                format_duration(c.request_timeout) + ")" +
                (c.requests_per_call > 1 ? " x " + std::to_string(c.requests_per_call) + " (the " +
                                               v.adapter + " adapter makes up to " +
                                               std::to_string(c.requests_per_call) +
                                               " requests in one call)"
                                         : std::string()) +
                " + a margin of " + format_duration(margin) +
                " (the larger of 1s and timeouts.connect) for the claim's commit and the dispatch: "
                "a lease that lapses while a request is on the wire lets a second worker act on a "
                "payment whose outcome is still unknown");

  const Millis worst = c.give_up_after + c.request_timeout + lease;
  if (c.resubmits() && outlives_key_retention(worst, c.key_retention)) {
    const Millis limit = key_retention_limit(c.key_retention);
    r.error(retry.mark_of("give_up_after"), retry.path_of("give_up_after"),
            "retry.give_up_after (" + format_duration(c.give_up_after) +
                ") + timeouts.request (" + format_duration(c.request_timeout) +
                ") + engine.lease (" + format_duration(lease) + ") = " + format_duration(worst) +
                " exceeds 0.9 x contract.key_retention (" + format_duration(c.key_retention) +
                ") = " + format_duration(limit) +
                ": this contract resubmits, and a resubmit after the vendor forgot the key "
                "would charge twice; lower give_up_after or check key_retention" +
                (preset.given ? " (values of the preset " + preset.file + " included)" : ""));
  }
}

}  // namespace

void read_providers(const Section& top, std::vector<Provider>& out, std::optional<Millis> lease) {
  std::map<std::string, std::string, std::less<>> names;
  for (const Section& p : top.list("providers",
                                   {"name", "adapter", "preset", "base_url", "api_key",
                                    "api_key_file", "timeouts", "contract", "retry", "risk",
                                    "callback", "options"},
                                   "provider")) {
    Provider v;
    if (read_identity(p, v)) p.unique("name", "provider name", v.name, names);
    const PresetRead preset = read_preset(p, v);
    const Section timeouts = p.section("timeouts", {"connect", "request"}, false);
    const Section contract = p.section(
        "contract", {"key_retention", "recovery", "not_found_final_after", "close_not_before"},
        !preset.given);
    const Section retry = p.section(
        "retry", {"max_attempts", "initial_backoff", "max_backoff", "give_up_after"}, false);
    const bool timeouts_ok = read_timeouts(timeouts, v.timeouts, v.contract);
    const bool contract_ok =
        read_contract(contract, v.contract, !preset.key_retention, !preset.recovery);
    const bool retry_ok = read_retry(retry, v.contract);
    if (lease) v.contract.lease = *lease;
    read_risk(p, v.risk);
    read_callback(p, v.callback, v.adapter);
    read_options(p, v.options, v.adapter);
    // Stripe's search is eventually consistent and Adyen's Checkout has no lookup by reference
    // (docs/vendors.md): their recovery replays the request, or waits for the callback.
    if (contract_ok && v.contract.recovery == RecoveryMode::lookup &&
        (v.adapter == "stripe" || v.adapter == "adyen"))
      p.reader().error(contract.mark_of("recovery"), contract.path_of("recovery"),
                       "the " + v.adapter +
                           " adapter cannot look a payment up by reference: use replay (or none)");
    // WeChat Pay and Alipay refuse a second order under the same out_trade_no
    // (OUT_TRADE_NO_USED, ACQ.CONTEXT_INCONSISTENT): recovery asks, never re-sends; and they
    // close an order by it, which makes the vendor-side fence confirmable (docs/vendors.md).
    if (keys_in_options(v.adapter)) {
      if (contract_ok && v.contract.recovery != RecoveryMode::lookup)
        p.reader().error(contract.mark_of("recovery"), contract.path_of("recovery"),
                         "the " + v.adapter +
                             " adapter recovers by querying out_trade_no: use lookup");
      // WeChat Pay's codepay has no close (its reverse refunds a paid order): no fence at all.
      v.contract.confirmed_close = !(v.adapter == "wechatpay" && v.options.product == "codepay");
      // WeChat Pay's refund asks for the order's total first; Alipay's close is followed by a
      // query when refused (providers/*/…_adapter.cpp): two requests under one lease.
      v.contract.requests_per_call = 2;
      // An Alipay QR code is an order only once scanned: until it expires, "no such order"
      // does not mean there will be none (core/decide.h, order_absent_final_at).
      if (v.adapter == "alipay" && v.options.product == "precreate")
        v.contract.order_expiry = v.options.order_expiry;
    } else if (contract.find("close_not_before")) {
      p.reader().error(contract.mark_of("close_not_before"), contract.path_of("close_not_before"),
                       "only adapters that close orders (wechatpay, alipay) take close_not_before");
    }
    if (lease && timeouts_ok && contract_ok && retry_ok && preset.ok)
      check_safety(timeouts, retry, v, *lease, preset);
    out.push_back(std::move(v));
  }
}

}  // namespace payorch::config::detail
