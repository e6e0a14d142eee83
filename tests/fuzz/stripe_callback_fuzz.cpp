// Fuzz target: verification and parsing of Stripe webhook events (providers/stripe/callback.h),
// through the adapter interface the callbacks endpoint uses (Adapter::verify_and_parse).
//
// Input: the first byte picks a mode, the second is a skew, the rest:
//   mode even  SIGNED: the rest is the body; the target signs it (t = now - skew) and checks
//              that it is refused only as malformed or stale, that extra v1= and v0= values
//              change nothing, and that any change to the signature, timestamp or body, or
//              another secret, is refused as bad_signature.
//   mode odd   RAW: "<Stripe-Signature value>\n\n<body>", the header fuzzed as given.
// In both, an accepted event must carry a valid, fresh v1= signature (verified independently
// here), and its event must say what the body says: the event id, data.object's id, amount,
// currency and metadata.client_key, and an outcome that its status allows.
#include <boost/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/signature.h"
#include "fuzz_adapter.h"
#include "fuzz_check.h"
#include "providers/adapter.h"

namespace {

namespace json = boost::json;
using namespace payorch;
using providers::CallbackCheck;
using providers::CallbackError;

constexpr std::int64_t now = 1'764'400'000;
constexpr std::int64_t tolerance_s = 300;
const std::string secret = "whsec_fuzz_stripe";

const providers::Adapter& adapter() { return fuzz::callback_adapter("stripe", secret, tolerance_s); }

CallbackCheck verify(const std::string& header, const std::string& body) {
  CallbackCheck c = adapter().verify_and_parse({{"stripe-signature", header}}, body, now);
  // Verified: at most one event (Stripe sends one event per delivery); refused: none.
  if (c.verified) FUZZ_CHECK(c.events.size() <= 1);
  else FUZZ_CHECK(!c.detail.empty() && c.events.empty());
  return c;
}

bool bad_signature(const CallbackCheck& c) { return !c.verified && c.error == CallbackError::bad_signature; }

// An independent reading of the header: every t= and every v1= value.
void scan(std::string_view header, std::vector<std::string>& ts, std::vector<std::string>& v1s) {
  std::size_t at = 0;
  while (at <= header.size()) {
    std::size_t end = header.find(',', at);
    if (end == std::string_view::npos) end = header.size();
    std::string_view part = header.substr(at, end - at);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (part.starts_with("t=")) ts.emplace_back(part.substr(2));
    if (part.starts_with("v1=")) v1s.push_back(fuzz::lower(part.substr(3)));
    at = end + 1;
  }
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out)
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
  return out;
}

void check_accepted(const CallbackCheck& c, const std::string& header, const std::string& body) {
  std::vector<std::string> ts, v1s;
  scan(header, ts, v1s);
  bool valid = false;
  for (const std::string& t : ts) {
    if (t.empty() || t.size() > 12 || !std::all_of(t.begin(), t.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      continue;
    const std::int64_t tv = std::stoll(t);
    const std::string mac = hmac_sha256_hex(secret, std::to_string(tv) + "." + body);
    if (std::find(v1s.begin(), v1s.end(), mac) != v1s.end() && (tv >= now ? tv - now : now - tv) <= tolerance_s)
      valid = true;
  }
  FUZZ_CHECK_MSG(valid, "accepted without a valid, fresh v1 signature: " + header);
  if (c.events.empty()) return;
  const providers::CallbackEvent& e = c.events.front();
  json::error_code ec;
  const json::value v = json::parse(body, ec);
  FUZZ_CHECK_MSG(!ec && v.is_object(), "an event from a body that is not a JSON object");
  const json::object& o = v.get_object();
  FUZZ_CHECK(o.at("id").is_string() && o.at("id").get_string() == e.event_id && !e.event_id.empty());
  const std::string type(o.at("type").as_string());
  const json::object& object = o.at("data").at("object").as_object();
  const bool refund = e.kind == providers::OperationKind::refund;
  FUZZ_CHECK(object.at("object").as_string() == (refund ? "refund" : "payment_intent"));
  FUZZ_CHECK(refund == (type.starts_with("refund.") || type == "charge.refund.updated"));
  FUZZ_CHECK(object.at("metadata").at("client_key").as_string() == e.client_key);
  FUZZ_CHECK(e.vendor_reference && object.at("id").as_string() == *e.vendor_reference);
  const json::value& amount = object.at("amount");
  FUZZ_CHECK(e.amount_minor && (amount.is_int64() ? amount.get_int64() == *e.amount_minor
                                                  : amount.as_uint64() == static_cast<std::uint64_t>(*e.amount_minor)));
  FUZZ_CHECK(e.currency && *e.currency == upper(object.at("currency").as_string()));
  const std::string status(object.at("status").as_string());
  switch (e.outcome) {
    case VendorOutcome::succeeded: FUZZ_CHECK(status == "succeeded"); break;
    case VendorOutcome::pending:
      FUZZ_CHECK(refund ? (status == "pending" || status == "requires_action")
                        : (status == "processing" || status == "requires_action" || status == "requires_confirmation"));
      break;
    case VendorOutcome::declined:
      FUZZ_CHECK(refund ? (status == "failed" || status == "canceled")
                        : (status == "canceled" || status == "requires_payment_method"));
      FUZZ_CHECK(e.decline_code && !e.decline_code->empty());
      break;
    default: FUZZ_CHECK_MSG(false, "an event outcome other than succeeded, pending or declined");
  }
}

void signed_mode(std::uint8_t skew_byte, const std::string& body) {
  const std::int64_t skew = (static_cast<std::int64_t>(skew_byte) - 128) * (skew_byte & 1 ? 5 : 1);
  const std::int64_t t = now - skew;
  const bool fresh = (skew < 0 ? -skew : skew) <= tolerance_s;
  const std::string header = sign_timestamped(secret, t, body);
  const CallbackCheck good = verify(header, body);
  FUZZ_CHECK_MSG(!bad_signature(good), "a correctly signed event refused as bad_signature: " + good.detail);
  if (!fresh) FUZZ_CHECK(!good.verified && good.error == CallbackError::stale_timestamp);
  else FUZZ_CHECK(good.verified || good.error == CallbackError::malformed);
  if (good.verified) check_accepted(good, header, body);
  // A secret being rolled: other v1 values, and a v0, beside the good one change nothing.
  const CallbackCheck rolled = verify("t=" + std::to_string(t) + ",v1=" + std::string(64, 'e') + header.substr(header.find(',')) +
                                         ",v0=" + std::string(64, '0'), body);
  FUZZ_CHECK(rolled.verified == good.verified && rolled.error == good.error && rolled.events.size() == good.events.size());
  const std::size_t pos = header.find("v1=") + 3 + (body.size() + skew_byte) % 64;
  std::string flipped = header;
  flipped[pos] = flipped[pos] == '0' ? '1' : '0';
  FUZZ_CHECK(bad_signature(verify(flipped, body)));
  FUZZ_CHECK(bad_signature(verify("t=" + std::to_string(t + 1) + header.substr(header.find(',')), body)));
  FUZZ_CHECK(bad_signature(verify(header, body + "\n")));
  FUZZ_CHECK(bad_signature(verify(sign_timestamped(secret + "x", t, body), body)));
  // Only v0 (the test-mode scheme) is no signature at all.
  FUZZ_CHECK(bad_signature(verify("t=" + std::to_string(t) + ",v0=" + header.substr(header.find("v1=") + 3), body)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  if (data[0] % 2 == 0) {
    signed_mode(data[1], std::string(rest));
    return 0;
  }
  const auto [head, body] = fuzz::split_once(rest, "\n\n");
  const std::string header(head);
  const std::string text(body);
  const CallbackCheck c = verify(header, text);
  if (c.verified) check_accepted(c, header, text);
  return 0;
}
