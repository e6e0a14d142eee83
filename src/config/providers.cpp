// providers[]: each vendor's connection, contract (docs/contract.md §5) and the startup checks that refuse
// a contract under which a retry could charge twice.
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>

#include "config/sections.h"
#include "core/decide.h"

namespace payorch::config::detail {
namespace {

constexpr std::array<std::string_view, 2> known_adapters{"sim", "stripe"};

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
            "unknown adapter \"" + out.adapter + "\"; known adapters: sim, stripe");
  if (p.text("base_url", out.base_url, true)) {
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

bool read_contract(const Section& s, Contract& out) {
  Reader& r = s.reader();
  bool ok = s.duration("key_retention", out.key_retention, true);
  std::string recovery;
  if (s.text("recovery", recovery, true)) {
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

void read_callback(const Section& p, Callback& out) {
  const Section s =
      p.section("callback", {"secret", "secret_file", "tolerance", "retry_horizon"}, true);
  if (std::optional<Secret> secret = s.secret("secret", true))
    out.secret = std::move(secret->value);
  s.duration("tolerance", out.tolerance);
  s.duration("retry_horizon", out.retry_horizon);
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
void check_safety(const Section& timeouts, const Section& retry, const Provider& v, Millis lease) {
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
                "would charge twice; lower give_up_after or check key_retention");
  }
}

}  // namespace

void read_providers(const Section& top, std::vector<Provider>& out, std::optional<Millis> lease) {
  std::map<std::string, std::string, std::less<>> names;
  for (const Section& p : top.list("providers",
                                   {"name", "adapter", "base_url", "api_key", "api_key_file",
                                    "timeouts", "contract", "retry", "risk", "callback", "options"},
                                   "provider")) {
    const Section timeouts = p.section("timeouts", {"connect", "request"}, false);
    const Section contract =
        p.section("contract", {"key_retention", "recovery", "not_found_final_after"}, true);
    const Section retry = p.section(
        "retry", {"max_attempts", "initial_backoff", "max_backoff", "give_up_after"}, false);
    Provider v;
    if (read_identity(p, v)) p.unique("name", "provider name", v.name, names);
    const bool timeouts_ok = read_timeouts(timeouts, v.timeouts, v.contract);
    const bool contract_ok = read_contract(contract, v.contract);
    const bool retry_ok = read_retry(retry, v.contract);
    if (lease) v.contract.lease = *lease;
    read_risk(p, v.risk);
    read_callback(p, v.callback);
    read_options(p, v.options, v.adapter);
    if (lease && timeouts_ok && contract_ok && retry_ok) check_safety(timeouts, retry, v, *lease);
    out.push_back(std::move(v));
  }
}

}  // namespace payorch::config::detail
