// Fuzz target: verification and parsing of `sim` vendor callbacks (docs/contract.md §5, §6; the
// refund events of §8), through the adapter interface the callbacks endpoint uses
// (Adapter::verify_and_parse).
//
// Input: the first byte picks a mode, the rest is split at the first "\n\n":
//   mode % 4 == 0, 1  SIGNED: the rest is the body; the target signs it with the provider's
//                     secret (t = now - skew, skew from the second byte) and checks that it is
//                     accepted or refused only as malformed/stale, then that flipping any one byte
//                     of the signature, of the timestamp or of the body, or signing with another
//                     secret, is refused as bad_signature.
//   mode % 4 == 2     RAW: "<Sim-Signature value>\n\n<body>": the header is fuzzed as given.
//   mode % 4 == 3     HEADERS: "<name: value lines>\n\n<body>": arbitrary header maps (keys
//                     lower-cased as the endpoint does, repeated ones joined with ", ").
// In every mode, an accepted callback must carry a v1= value that is the HMAC of "<t>.<body>"
// under the secret for one of its t= values (verified independently here), a timestamp within
// tolerance, and an event that matches the body as any JSON reader sees it.
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
#include "providers/sim/callback.h"

namespace {

namespace json = boost::json;
using namespace payorch;
using providers::CallbackCheck;
using providers::CallbackError;

constexpr std::int64_t now = 1'764'400'000;
constexpr std::int64_t tolerance_s = 300;
const std::string secret = "whsec_fuzz_secret";

const providers::Adapter& adapter() { return fuzz::callback_adapter("sim", secret, tolerance_s); }

CallbackCheck verify(const std::map<std::string, std::string>& headers, const std::string& body) {
  CallbackCheck c = adapter().verify_and_parse(headers, body, now);
  // Exactly one of: one event (the sim protocol has no batches), or an error with a reason.
  if (c.verified) FUZZ_CHECK(c.detail.empty() && c.events.size() == 1);
  else FUZZ_CHECK(!c.detail.empty() && c.events.empty());
  return c;
}

CallbackCheck verify_signature(const std::string& header, const std::string& body) {
  return verify({{"sim-signature", header}, {"content-type", "application/json"}}, body);
}

bool refused_as_bad_signature(const CallbackCheck& c) {
  return !c.verified && c.error == CallbackError::bad_signature;
}

// An independent reading of "t=<digits>,v1=<hex>" lists: every t= value and every v1= value.
void scan_signature(std::string_view header, std::vector<std::string>& ts, std::vector<std::string>& v1s) {
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

// An accepted callback: its signature really is valid and fresh, and the event says what the
// body says.
void check_accepted(const CallbackCheck& c, const std::map<std::string, std::string>& headers,
                    const std::string& body) {
  const auto h = headers.find("sim-signature");
  FUZZ_CHECK_MSG(h != headers.end(), "accepted without a Sim-Signature header");
  std::vector<std::string> ts, v1s;
  scan_signature(h->second, ts, v1s);
  bool valid = false;
  for (const std::string& t : ts) {
    if (t.empty() || t.size() > 12 || !std::all_of(t.begin(), t.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      continue;
    const std::int64_t tv = std::stoll(t);
    const std::string mac = hmac_sha256_hex(secret, std::to_string(tv) + "." + body);
    if (std::find(v1s.begin(), v1s.end(), mac) != v1s.end() && (tv >= now ? tv - now : now - tv) <= tolerance_s)
      valid = true;
  }
  FUZZ_CHECK_MSG(valid, "accepted a callback without a valid, fresh signature: " + h->second);

  const providers::CallbackEvent& e = c.events.at(0);
  json::error_code ec;
  const json::value v = json::parse(body, ec);
  FUZZ_CHECK_MSG(!ec && v.is_object(), "accepted a body that is not a JSON object");
  const json::object& o = v.get_object();
  FUZZ_CHECK(!e.event_id.empty() && o.at("id").is_string() && o.at("id").get_string() == e.event_id);
  const std::string type(o.at("type").get_string());
  // "<charge|refund>.<status>": the event's kind, and its outcome.
  const std::string kind(providers::to_string(e.kind));
  const std::string status = type.substr(type.find('.') + 1);
  FUZZ_CHECK(type == kind + "." + status);
  const VendorOutcome want = status == "succeeded" ? VendorOutcome::succeeded
                       : status == "declined" ? VendorOutcome::declined
                                              : VendorOutcome::pending;
  FUZZ_CHECK(status == "succeeded" || status == "declined" || status == "pending");
  FUZZ_CHECK(e.outcome == want);
  FUZZ_CHECK(o.at("created").is_int64() || o.at("created").is_uint64());
  const json::object& data = o.at("data").as_object();
  FUZZ_CHECK(data.at("reference").is_string() && data.at("reference").get_string() == e.client_key);
  FUZZ_CHECK(data.at("status").is_string() && data.at("status").get_string() == status);
  if (e.kind == providers::OperationKind::refund) FUZZ_CHECK(data.at("charge").is_string());
  FUZZ_CHECK(e.vendor_reference && !e.vendor_reference->empty() && data.at("id").get_string() == *e.vendor_reference);
  FUZZ_CHECK(e.amount_minor && e.currency);
  const json::value& amount = data.at("amount_minor");
  FUZZ_CHECK(amount.is_int64() ? amount.get_int64() == *e.amount_minor
                               : amount.is_uint64() && amount.get_uint64() == static_cast<std::uint64_t>(*e.amount_minor));
  FUZZ_CHECK(data.at("currency").get_string() == *e.currency);
}

void check(const std::map<std::string, std::string>& headers, const std::string& body) {
  const CallbackCheck c = verify(headers, body);
  if (c.verified) check_accepted(c, headers, body);
}

void signed_mode(std::uint8_t skew_byte, const std::string& body) {
  // Mostly fresh (|skew| <= 150 s); sometimes stale (up to about ±10 minutes).
  const std::int64_t skew = (static_cast<std::int64_t>(skew_byte) - 128) * (skew_byte & 1 ? 5 : 1);
  const std::int64_t t = now - skew;
  const bool fresh = (skew < 0 ? -skew : skew) <= tolerance_s;
  const std::string header = sign_timestamped(secret, t, body);
  const std::map<std::string, std::string> headers{{"sim-signature", header}};
  const CallbackCheck good = verify(headers, body);
  FUZZ_CHECK_MSG(!refused_as_bad_signature(good), "a correctly signed callback was refused as bad_signature: " + good.detail);
  if (!fresh) FUZZ_CHECK_MSG(!good.verified && good.error == CallbackError::stale_timestamp, "stale callback not refused as stale");
  else FUZZ_CHECK(good.verified || good.error == CallbackError::malformed);
  if (good.verified) check_accepted(good, headers, body);

  // Same body, same t, other v1 values placed beside the good one: still accepted (rotation).
  const CallbackCheck rotated = verify_signature(header + ",v1=" + std::string(64, '0') + ",v0=abc", body);
  FUZZ_CHECK(rotated.verified == good.verified && rotated.error == good.error);

  // Flip one byte of the signature (each position, rotating through the input), the
  // timestamp, or the body: always bad_signature, never an event.
  const std::size_t v1_at = header.find("v1=") + 3;
  const std::size_t pos = v1_at + (body.size() + skew_byte) % 64;
  for (char repl : {'0', 'f', 'A', 'g'}) {
    std::string bad = header;
    if (bad[pos] == repl || (repl == 'A' && bad[pos] == 'a')) continue;  // upper case of itself is the same hex
    bad[pos] = repl;
    FUZZ_CHECK_MSG(refused_as_bad_signature(verify_signature(bad, body)), "flipped signature accepted: " + bad);
  }
  std::string truncated = header.substr(0, header.size() - 1);
  FUZZ_CHECK(refused_as_bad_signature(verify_signature(truncated, body)));
  FUZZ_CHECK(refused_as_bad_signature(verify_signature(header + "0", body)));
  const std::string other_t = "t=" + std::to_string(t + 1) + header.substr(header.find(','));
  FUZZ_CHECK(refused_as_bad_signature(verify_signature(other_t, body)));
  if (!body.empty()) {
    std::string bad_body = body;
    bad_body[(skew_byte * 31u) % bad_body.size()] ^= static_cast<char>(1u << (skew_byte % 8));
    FUZZ_CHECK(refused_as_bad_signature(verify_signature(header, bad_body)));
  }
  FUZZ_CHECK(refused_as_bad_signature(verify_signature(header, body + " ")));
  FUZZ_CHECK(refused_as_bad_signature(verify_signature(sign_timestamped(secret + "x", t, body), body)));
  FUZZ_CHECK(refused_as_bad_signature(verify({{"sim-signature-x", header}}, body)));
  FUZZ_CHECK(refused_as_bad_signature(verify({}, body)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t mode = data[0] % 4;
  const std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  if (mode <= 1) {
    signed_mode(data[1], std::string(rest));
    return 0;
  }
  auto [head, body] = fuzz::split_once(rest, "\n\n");
  std::map<std::string, std::string> headers;
  if (mode == 2) {
    headers.emplace("sim-signature", std::string(head));
  } else {
    while (!head.empty()) {
      auto [line, more] = fuzz::split_once(head, "\n");
      head = more;
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      auto [it, inserted] = headers.emplace(fuzz::lower(line.substr(0, colon)), std::string(value));
      if (!inserted) it->second += ", " + std::string(value);
    }
  }
  check(headers, std::string(body));
  return 0;
}
