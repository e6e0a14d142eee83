// providers[]: each vendor's connection, contract (docs/contract.md §5) and the startup checks that refuse
// a contract under which a retry could charge twice.
#include <algorithm>
#include <array>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "config/sections.h"
#include "core/decide.h"

namespace payorch::config::detail {
namespace {

constexpr std::array<std::string_view, 3> known_adapters{"sim", "stripe", "adyen"};

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
            "unknown adapter \"" + out.adapter + "\"; known adapters: sim, stripe, adyen");
  // The vendors' documented hosts are the defaults: Stripe's API (https://docs.stripe.com/api),
  // and Adyen's Checkout test environment (the `servers` entry of CheckoutService-v71.json;
  // live Checkout URLs carry the merchant's own prefix, so a live provider names its base_url).
  if (out.adapter == "stripe") out.base_url = "https://api.stripe.com";
  if (out.adapter == "adyen") out.base_url = "https://checkout-test.adyen.com/v71";
  if (p.text("base_url", out.base_url, out.base_url.empty()) && p.find("base_url")) {
    if (!is_http_url(out.base_url) || out.base_url.find_first_of("?#") != std::string::npos)
      r.error(p.mark_of("base_url"), p.path_of("base_url"),
              "expected an http:// or https:// URL without query or fragment, got \"" +
                  out.base_url + "\"");
    while (out.base_url.ends_with('/')) out.base_url.pop_back();
  }
  if (std::optional<Secret> key = p.secret("api_key", true)) {
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
  return s.duration_or_never("not_found_final_after", out.not_found_final_after) && ok && s.ok();
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

void read_risk(const Section& p, Risk& out) {
  const Section s = p.section("risk", {"max_unknown_count", "max_unknown_amount_minor"}, false);
  s.integer("max_unknown_count", out.max_unknown_count, 0, int64_max);
  s.integer("max_unknown_amount_minor", out.max_unknown_amount_minor, 0, int64_max);
}

// The vendor's timings of callbacks; an entry's `callback` adds the secret.
bool read_callback_timing(const Section& s, Callback& out) {
  const bool tolerance_ok = s.duration("tolerance", out.tolerance);
  return s.duration("retry_horizon", out.retry_horizon) && tolerance_ok;
}

void read_callback(const Section& p, Callback& out) {
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
constexpr std::array<std::string_view, 5> vendor_facts{
    "contract.key_retention", "contract.recovery", "contract.not_found_final_after",
    "callback.tolerance", "callback.retry_horizon"};

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
       "callback.tolerance", "callback.retry_horizon"},
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
        top.section("contract", {"key_retention", "recovery", "not_found_final_after"}, false);
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
void read_options(const Section& p, AdapterOptions& out, const std::string& adapter) {
  if (adapter == "adyen") {
    const Section s = p.section("options", {"merchant_account"}, true);
    s.text("merchant_account", out.merchant_account, true);
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
  const Millis margin = std::max(Millis(1'000), v.timeouts.connect);
  if (lease < c.request_timeout + margin)
    r.error(timeouts.mark_of("request"), timeouts.path_of("request"),
            "engine.lease (" + format_duration(lease) + ") must be at least the vendor request timeout (" +
                format_duration(c.request_timeout) + ") + a margin of " + format_duration(margin) +
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
        "contract", {"key_retention", "recovery", "not_found_final_after"}, !preset.given);
    const Section retry = p.section(
        "retry", {"max_attempts", "initial_backoff", "max_backoff", "give_up_after"}, false);
    const bool timeouts_ok = read_timeouts(timeouts, v.timeouts, v.contract);
    const bool contract_ok =
        read_contract(contract, v.contract, !preset.key_retention, !preset.recovery);
    const bool retry_ok = read_retry(retry, v.contract);
    if (lease) v.contract.lease = *lease;
    read_risk(p, v.risk);
    read_callback(p, v.callback);
    read_options(p, v.options, v.adapter);
    // Stripe's search is eventually consistent and Adyen's Checkout has no lookup by reference
    // (docs/vendors.md): their recovery replays the request, or waits for the callback.
    if (contract_ok && v.contract.recovery == RecoveryMode::lookup &&
        (v.adapter == "stripe" || v.adapter == "adyen"))
      p.reader().error(contract.mark_of("recovery"), contract.path_of("recovery"),
                       "the " + v.adapter +
                           " adapter cannot look a payment up by reference: use replay (or none)");
    if (lease && timeouts_ok && contract_ok && retry_ok && preset.ok)
      check_safety(timeouts, retry, v, *lease, preset);
    out.push_back(std::move(v));
  }
}

}  // namespace payorch::config::detail
