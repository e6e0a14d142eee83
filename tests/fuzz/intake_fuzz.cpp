// Fuzz target: the intake request path of POST /v1/payments (docs/contract.md §2) without a socket.
//
// Input: either a bare request body, or a small HTTP-like head and a body:
//   POST /v1/payments?limit=5            <- request target (query parsing, routing)
//   Content-Type: application/json       <- json_content_type
//   Idempotency-Key: order-1             <- parse_intent's header operation_id
//   Prefer: wait=5                       <- preferred_wait
//   Authorization: Bearer tok_acme_0123  <- Authenticator::tenant
//   <empty line>
//   {"operation_id":"order-1",...}       <- parse_intent, request_digest, jcs_canonicalize
//
// Properties: an accepted intent is valid in every field (amount 1..2^53-1 exactly as written,
// an active currency, ...), survives serialise -> parse with the same digest, and its digest does
// not depend on member order; a refusal has a catalogued status, problem and field codes; a body
// any JSON parser refuses is always 400 invalid-json; JCS output re-parses to the same value and
// is already canonical; header and query parsers stay in their documented ranges.
#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/digest.h"
#include "core/intent.h"
#include "fuzz_check.h"
#include "http/auth.h"
#include "http/request_fields.h"

namespace {

namespace json = boost::json;
using namespace payorch;
using fuzz::lower;

const std::set<std::string_view> field_codes = {"required", "wrong_type", "not_integer", "out_of_range",
                                                "invalid_format", "unknown_currency", "too_long", "too_many",
                                                "unknown_field", "empty", "raw_card_data"};

std::string_view trim(std::string_view s, std::string_view chars = " \t") {
  while (!s.empty() && chars.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  while (!s.empty() && chars.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The value of a decimal digit string, saturated at 10^12.
std::int64_t digits_value(std::string_view s) {
  std::int64_t n = 0;
  for (char c : s) n = std::min<std::int64_t>(n * 10 + (c - '0'), 1'000'000'000'000);
  return n;
}

// ---- JCS (RFC 8785) ---------------------------------------------------------------------------

// UTF-16 code units of valid UTF-8 (the parser guarantees validity), written independently of
// digest.cpp's version.
std::u16string utf16(std::string_view s) {
  std::u16string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::uint32_t cp;
    std::size_t n;
    if (b < 0x80) cp = b, n = 1;
    else if (b < 0xE0) cp = b & 0x1F, n = 2;
    else if (b < 0xF0) cp = b & 0x0F, n = 3;
    else cp = b & 0x07, n = 4;
    for (std::size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += n;
    if (cp < 0x10000) out.push_back(static_cast<char16_t>(cp));
    else {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    }
  }
  return out;
}

// True when `v` holds only values whose canonical text re-parses exactly (no doubles: Boost
// 1.81's parser may land one ulp off; integers within ±2^53).
bool exactly_reparseable(const json::value& v) {
  switch (v.kind()) {
    case json::kind::double_: return false;
    case json::kind::int64: return v.get_int64() >= -(std::int64_t{1} << 53) && v.get_int64() <= (std::int64_t{1} << 53);
    case json::kind::uint64: return v.get_uint64() <= (std::uint64_t{1} << 53);
    case json::kind::array:
      return std::all_of(v.get_array().begin(), v.get_array().end(), exactly_reparseable);
    case json::kind::object:
      return std::all_of(v.get_object().begin(), v.get_object().end(),
                         [](const json::key_value_pair& kv) { return exactly_reparseable(kv.value()); });
    default: return true;
  }
}

// Members of every object in canonical order: strictly increasing UTF-16 code units.
void check_member_order(const json::value& v) {
  if (v.is_array())
    for (const auto& e : v.get_array()) check_member_order(e);
  if (!v.is_object()) return;
  std::optional<std::u16string> prev;
  for (const auto& kv : v.get_object()) {
    std::u16string k = utf16(kv.key());
    FUZZ_CHECK_MSG(!prev || *prev < k, "JCS members out of order at key \"" + std::string(kv.key()) + "\"");
    prev = std::move(k);
    check_member_order(kv.value());
  }
}

void check_jcs(const json::value& v) {
  std::string canon;
  try {
    canon = jcs_canonicalize(v);
  } catch (const std::invalid_argument&) {
    // Documented: NaN/Infinity (Boost reads 1e400 as infinity) are not JSON numbers.
    return;
  }
  json::error_code ec;
  json::value back = json::parse(canon, ec);
  FUZZ_CHECK_MSG(!ec, "JCS output is not JSON: " + canon);
  check_member_order(back);
  if (!exactly_reparseable(v)) return;
  FUZZ_CHECK_MSG(back == v, "JCS output parses to another value: " + canon);
  FUZZ_CHECK_MSG(jcs_canonicalize(back) == canon, "JCS is not idempotent: " + canon);
}

// ---- intents -----------------------------------------------------------------------------------

json::object to_json(const Intent& in, bool reversed) {
  std::vector<std::pair<std::string, json::value>> members = {
      {"operation_id", json::string(in.operation_id)}, {"amount_minor", in.amount_minor},
      {"currency", json::string(in.currency)},         {"payee", json::string(in.payee)},
      {"source", json::string(in.source)}};
  if (in.provider) members.emplace_back("provider", json::string(*in.provider));
  if (in.description) members.emplace_back("description", json::string(*in.description));
  if (!in.metadata.empty()) {
    json::object md;
    for (const auto& [k, val] : in.metadata) md[k] = val;
    members.emplace_back("metadata", std::move(md));
  }
  if (reversed) std::reverse(members.begin(), members.end());
  json::object o;
  for (auto& [k, val] : members) o[k] = std::move(val);
  return o;
}

bool same_intent(const Intent& a, const Intent& b) {
  return a.operation_type == b.operation_type && a.operation_id == b.operation_id &&
         a.amount_minor == b.amount_minor && a.currency == b.currency && a.payee == b.payee &&
         a.source == b.source && a.provider == b.provider && a.description == b.description &&
         a.metadata == b.metadata;
}

bool has_control(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9F)
      return true;
  }
  return false;
}

void check_accepted(const Intent& in, std::string_view body, std::optional<std::string_view> key) {
  const IntentLimits limits;
  FUZZ_CHECK(in.operation_type == "payment");
  FUZZ_CHECK(in.amount_minor >= 1 && in.amount_minor <= max_amount_minor);
  FUZZ_CHECK(valid_currency(in.currency));
  FUZZ_CHECK(in.currency.size() == 3);
  FUZZ_CHECK(valid_operation_id(in.operation_id));
  for (const std::string* t : {&in.payee, &in.source})
    FUZZ_CHECK(!t->empty() && t->size() <= limits.max_text && !has_control(*t));
  FUZZ_CHECK_MSG(!looks_like_pan(in.source), "accepted a card number as source");
  if (in.provider)
    FUZZ_CHECK(!in.provider->empty() && in.provider->size() <= 64 &&
               std::all_of(in.provider->begin(), in.provider->end(), [](char c) {
                 return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
               }));
  if (in.description) FUZZ_CHECK(in.description->size() <= limits.max_description);
  FUZZ_CHECK(in.metadata.size() <= limits.max_metadata_entries);
  for (const auto& [k, v] : in.metadata) FUZZ_CHECK(!k.empty());

  // What any JSON reader sees in the body is what was accepted, never a rounded amount.
  json::error_code ec;
  const json::value plain = json::parse(body, ec);
  FUZZ_CHECK_MSG(!ec && plain.is_object(), "accepted a body Boost.JSON cannot read");
  const json::object& o = plain.get_object();
  const json::value& amount = o.at("amount_minor");
  FUZZ_CHECK((amount.is_int64() && amount.get_int64() == in.amount_minor) ||
             (amount.is_uint64() && amount.get_uint64() == static_cast<std::uint64_t>(in.amount_minor)));
  FUZZ_CHECK(o.at("currency").is_string() && o.at("currency").get_string() == in.currency);
  FUZZ_CHECK(o.at("payee").get_string() == in.payee && o.at("source").get_string() == in.source);
  for (const auto& kv : o)
    FUZZ_CHECK_MSG((std::set<std::string_view>{"operation_id", "amount_minor", "currency", "payee", "source",
                                                "provider", "description", "metadata"}
                        .count(kv.key())),
                   "accepted unknown member " + std::string(kv.key()));
  if (const json::value* id = o.if_contains("operation_id"); id && !id->is_null())
    FUZZ_CHECK(id->is_string() && id->get_string() == in.operation_id);
  else
    FUZZ_CHECK_MSG(key.has_value(), "accepted without operation_id or Idempotency-Key");

  // The digest: well formed, covering exactly the canonical digest fields.
  const std::string digest = request_digest(in);
  FUZZ_CHECK(digest.size() == 7 + 64 && digest.starts_with("sha256:"));
  FUZZ_CHECK(std::all_of(digest.begin() + 7, digest.end(),
                         [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
  const json::object fields = digest_fields(in);
  check_jcs(fields);
  FUZZ_CHECK(digest == "sha256:" + sha256_hex(jcs_canonicalize(fields)));

  // Round trip: the intent written back as a body is the same intent with the same digest,
  // whatever the member order, and whether the id comes from the body or the header.
  for (bool reversed : {false, true}) {
    const std::string again = json::serialize(to_json(in, reversed));
    auto reparsed = parse_intent(again, std::nullopt);
    const Intent* r = std::get_if<Intent>(&reparsed);
    FUZZ_CHECK_MSG(r != nullptr, "serialised intent refused: " + again);
    FUZZ_CHECK_MSG(same_intent(*r, in), "serialised intent reads differently: " + again);
    FUZZ_CHECK(request_digest(*r) == digest);
    auto with_header = parse_intent(again, "\"" + in.operation_id + "\"");
    FUZZ_CHECK(std::holds_alternative<Intent>(with_header) &&
               same_intent(std::get<Intent>(with_header), in));
  }
  json::object no_id = to_json(in, false);
  no_id.erase("operation_id");
  auto by_header = parse_intent(json::serialize(no_id), in.operation_id);
  FUZZ_CHECK(std::holds_alternative<Intent>(by_header) && request_digest(std::get<Intent>(by_header)) == digest);
}

void check_rejected(const IntentRejection& r, std::string_view body) {
  using Kind = IntentRejection::Kind;
  FUZZ_CHECK(!r.detail.empty());
  if (r.kind == Kind::invalid_json || r.kind == Kind::idempotency_key_mismatch) {
    FUZZ_CHECK(r.errors.empty());
  } else if (r.kind == Kind::raw_card_data) {
    // Only ever about source, and never repeating it.
    FUZZ_CHECK(r.errors.size() == 1 && r.errors[0].field == "source" && r.errors[0].code == "raw_card_data");
  } else {
    FUZZ_CHECK(r.kind == Kind::invalid_request);
    FUZZ_CHECK(!r.errors.empty() || r.detail == "the body must be a JSON object");
  }
  for (const FieldError& e : r.errors) {
    FUZZ_CHECK_MSG(field_codes.count(e.code), "undocumented field error code " + e.code);
    FUZZ_CHECK(!e.message.empty());
  }
  if (r.kind == Kind::invalid_json) {
    // Refused as JSON although a strict parser (same depth limit) reads it: only a duplicated key.
    json::parse_options opts;
    opts.max_depth = IntentLimits{}.max_depth;
    json::error_code ec;
    json::parse(body, ec, {}, opts);
    if (!ec) FUZZ_CHECK_MSG(r.detail.find("duplicate object key") != std::string::npos, r.detail);
  }
}

void check_body(std::string_view body, std::optional<std::string_view> key) {
  auto result = parse_intent(body, key);
  json::error_code ec;
  const json::value plain = json::parse(body, ec);
  if (ec) {
    // Anything Boost.JSON refuses (it allows depth 32 > 8) is never an intent.
    const auto* r = std::get_if<IntentRejection>(&result);
    FUZZ_CHECK_MSG(r && r->kind == IntentRejection::Kind::invalid_json, "unparseable body not refused as invalid-json");
  } else {
    check_jcs(plain);
  }
  if (const auto* in = std::get_if<Intent>(&result)) check_accepted(*in, body, key);
  else check_rejected(std::get<IntentRejection>(result), body);
}

// ---- head: request target and headers ---------------------------------------------------------

const config::Config& auth_config() {
  static const config::Config cfg = [] {
    config::Config c;
    c.admin_token = "adm_token_9876";
    c.tenants.push_back(config::Tenant{"acme", "tok_acme_0123", std::nullopt});
    c.tenants.push_back(config::Tenant{"globex", "tok_globex_456", std::nullopt});
    return c;
  }();
  return cfg;
}

void check_target(std::string_view target) {
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return;
  (void)url->path();
  const http::PaymentsQuery pq = http::parse_payments_query(url->params());
  const http::EventsQuery eq = http::parse_events_query(url->params());
  FUZZ_CHECK(pq.page.limit >= 1 && pq.page.limit <= 200 && eq.limit >= 1 && eq.limit <= 200);
  FUZZ_CHECK(eq.after >= 0);
  if (pq.page.cursor) FUZZ_CHECK(pq.page.cursor->size() == 30 && pq.page.cursor->starts_with("pay_"));
  if (pq.state) FUZZ_CHECK(parse_payment_state(to_string(*pq.state)) == pq.state);
  std::size_t params = 0;
  for (auto p : url->params()) {
    ++params;
    const std::string value = p.has_value ? std::string(p.value) : std::string();
    if (p.key == "limit") {
      const bool ok = all_digits(value) && digits_value(value) >= 1 && digits_value(value) <= 200;
      if (!ok) {
        FUZZ_CHECK(!pq.errors.empty() && !eq.errors.empty());
      }
    }
  }
  FUZZ_CHECK(pq.errors.size() <= params && eq.errors.size() <= params);
}

void check_header(std::string_view name, std::string_view value) {
  const std::string n = lower(name);
  if (n == "content-type") {
    const bool json_ct = http::json_content_type(value);
    std::string_view media = trim(value.substr(0, value.find(';')), " ");
    if (lower(media) == "application/json" && !value.starts_with(' ')) FUZZ_CHECK(json_ct);
    if (!lower(value).starts_with("application/json")) FUZZ_CHECK(!json_ct);
  } else if (n == "prefer") {
    const int w = http::preferred_wait(value);
    FUZZ_CHECK(w >= 0 && w <= http::max_wait_s);
    if (value.starts_with("wait=") && all_digits(value.substr(5)) && value.find(',') == std::string_view::npos)
      FUZZ_CHECK(w == std::min<std::int64_t>(digits_value(value.substr(5)), http::max_wait_s) ||
                 (value.size() > 5 + 9 && w == 0));  // beyond int: malformed
  } else if (n == "authorization") {
    static const http::Authenticator auth(auth_config());
    const std::optional<std::string> tenant = auth.tenant(value);
    std::optional<std::string> expected;
    if (value.size() > 7 && lower(value.substr(0, 7)) == "bearer ") {
      const std::string_view token = trim(value.substr(7), " ");
      for (const auto& t : auth_config().tenants)
        if (token == t.token) expected = t.id;
    }
    FUZZ_CHECK_MSG(tenant == expected, "Authorization: " + std::string(value));
    FUZZ_CHECK(!(tenant && auth.is_admin(value)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view body = input;
  std::optional<std::string> key;
  if (input.starts_with("POST ") || input.starts_with("GET ")) {
    bool has_body = false;
    auto [head, rest] = fuzz::split_once(input, "\n\n", &has_body);
    body = rest;
    auto [request_line, headers] = fuzz::split_once(head, "\n");
    request_line = trim(request_line, "\r");
    check_target(trim(request_line.substr(request_line.find(' ') + 1), " \r"));
    while (!headers.empty()) {
      auto [line, more] = fuzz::split_once(headers, "\n");
      headers = more;
      line = trim(line, "\r");
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view name = line.substr(0, colon);
      const std::string_view value = trim(line.substr(colon + 1), " \t");
      check_header(name, value);
      if (lower(name) == "idempotency-key") key = std::string(value);
    }
  }
  check_body(body, key ? std::optional<std::string_view>(*key) : std::nullopt);
  return 0;
}
