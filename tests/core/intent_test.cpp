#include "core/intent.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

namespace payorch {
namespace {

// A valid body with `members` (already JSON, e.g. R"("currency":"usd")") replacing or adding
// fields. Base fields named in `drop` are left out.
std::string body_with(std::string_view members, std::initializer_list<std::string_view> drop = {}) {
  const std::pair<std::string_view, std::string_view> base[] = {
      {"operation_id", R"("operation_id":"order-1")"}, {"amount_minor", R"("amount_minor":1000)"},
      {"currency", R"("currency":"USD")"},           {"payee", R"("payee":"acme")"},
      {"source", R"("source":"tok_ok")"}};
  std::string out = "{";
  for (const auto& [name, text] : base) {
    const std::string key = "\"" + std::string(name) + "\":";
    if (std::find(drop.begin(), drop.end(), name) != drop.end()) continue;
    if (members.find(key) != std::string_view::npos) continue;  // overridden
    if (out.size() > 1) out += ",";
    out += text;
  }
  if (!members.empty()) out += (out.size() > 1 ? "," : "") + std::string(members);
  return out + "}";
}

Intent accept(std::string_view body, std::optional<std::string_view> header = std::nullopt,
              const IntentLimits& limits = {}) {
  auto r = parse_intent(body, header, limits);
  if (auto* rej = std::get_if<IntentRejection>(&r)) {
    std::string errors;
    for (const auto& e : rej->errors) errors += " " + e.field + "/" + e.code;
    FAIL_CHECK("rejected: " << problem_code(rej->kind) << ": " << rej->detail << errors << " body=" << body);
    return {};
  }
  return std::get<Intent>(r);
}

IntentRejection reject(std::string_view body, std::optional<std::string_view> header = std::nullopt,
                       const IntentLimits& limits = {}) {
  auto r = parse_intent(body, header, limits);
  if (!std::holds_alternative<IntentRejection>(r)) {
    FAIL_CHECK("accepted: " << body);
    return {};
  }
  return std::get<IntentRejection>(r);
}

// The single field error a body with one bad field gets.
FieldError only_error(std::string_view body, std::optional<std::string_view> header = std::nullopt,
                      const IntentLimits& limits = {}) {
  IntentRejection r = reject(body, header, limits);
  CHECK(problem_code(r.kind) == "invalid-request");
  REQUIRE_MESSAGE(r.errors.size() == 1, body);
  CHECK_FALSE(r.errors[0].message.empty());
  return r.errors[0];
}

void check_error(std::string_view members, std::string_view field, std::string_view code) {
  const FieldError e = only_error(body_with(members));
  CHECK_MESSAGE(e.field == field, members);
  CHECK_MESSAGE(e.code == code, members << " -> " << e.code);
}

TEST_CASE("intent: a valid body is accepted with every field") {
  const Intent i = accept(
      R"({"operation_id":"A-z_0.9:x","amount_minor":1000,"currency":"EUR","payee":"Zo\u00eb \u682a\u5f0f\u4f1a\u793e \ud83d\ude00",)"
      R"("source":"tok_ok","provider":"sim-2_b","description":"line\nbreak","metadata":{"order":"42","k":""}})");
  CHECK(i.operation_type == "payment");
  CHECK(i.operation_id == "A-z_0.9:x");
  CHECK(i.amount_minor == 1000);
  CHECK(i.currency == "EUR");
  CHECK(i.payee == "Zo\u00eb \u682a\u5f0f\u4f1a\u793e \U0001F600");
  CHECK(i.source == "tok_ok");
  CHECK(i.provider == "sim-2_b");
  CHECK(i.description == "line\nbreak");
  CHECK(i.metadata == std::map<std::string, std::string>{{"order", "42"}, {"k", ""}});
}

TEST_CASE("intent: optional fields absent or null") {
  Intent i = accept(body_with(""));
  CHECK_FALSE(i.provider);
  CHECK_FALSE(i.description);
  CHECK(i.metadata.empty());
  i = accept(body_with(R"("provider":null,"description":null,"metadata":null)"));
  CHECK_FALSE(i.provider);
  CHECK_FALSE(i.description);
  CHECK(i.metadata.empty());
}

TEST_CASE("intent: unparseable bodies are 400 invalid-json") {
  for (std::string_view body : {"", " ", "{", "{\"a\":}", "{\"a\":1,}", "{'a':1}", "{\"a\":1} x",
                                "{\"a\":1}{}", "{\"a\":1 /* c */}", "nul", "{\"a\":\"\xff\"}",
                                "{\"a\":\"\\ud800\"}", "{\"a\":01}", "{\"a\":NaN}"}) {
    const IntentRejection r = reject(body);
    CHECK_MESSAGE(problem_code(r.kind) == "invalid-json", body);
    CHECK(r.errors.empty());
  }
  CHECK(accept(" \n" + body_with("") + "\n ").operation_id == "order-1");  // surrounding whitespace is fine
}

TEST_CASE("intent: valid JSON that is not an object is 422 invalid-request") {
  for (std::string_view body : {"[]", "null", "1", "\"x\"", "true", "[{\"operation_id\":\"a\"}]"}) {
    const IntentRejection r = reject(body);
    CHECK_MESSAGE(problem_code(r.kind) == "invalid-request", body);
  }
}

TEST_CASE("intent: duplicate keys anywhere are 400 invalid-json naming the key") {
  IntentRejection r = reject(R"({"operation_id":"a","amount_minor":1,"amount_minor":1000000,"currency":"USD","payee":"p","source":"s"})");
  CHECK(problem_code(r.kind) == "invalid-json");
  CHECK(r.detail.find("\"amount_minor\"") != std::string::npos);

  r = reject(body_with(R"("metadata":{"a":"1","b":"2","a":"3"})"));
  CHECK(problem_code(r.kind) == "invalid-json");
  CHECK(r.detail.find("\"metadata.a\"") != std::string::npos);

  r = reject(body_with(R"("x":[{"k":1},{"k":1,"k":2}])"));
  CHECK(problem_code(r.kind) == "invalid-json");
  CHECK(r.detail.find("\"x[1].k\"") != std::string::npos);

  // The same key in different objects is not a duplicate (then only "x" is unknown).
  CHECK(only_error(body_with(R"("x":[{"k":1},{"k":2}])")).code == "unknown_field");
  // Escaped spellings of the same key are the same key.
  r = reject(R"({"payee":"a","pay\u0065e":"b"})");
  CHECK(problem_code(r.kind) == "invalid-json");
}

TEST_CASE("intent: nesting deeper than max_depth is 400") {
  IntentLimits limits;
  limits.max_depth = 4;
  std::string deep = body_with(R"("x":[[[[1]]]])");  // object + 4 arrays = 5 levels
  IntentRejection r = reject(deep, std::nullopt, limits);
  CHECK(problem_code(r.kind) == "invalid-json");
  CHECK(r.detail.find("deeper") != std::string::npos);
  // At the limit it parses (and x is then merely unknown).
  CHECK(only_error(body_with(R"("x":[[[1]]])"), std::nullopt, limits).code == "unknown_field");

  // The default limit copes with hostile depth without recursion trouble.
  std::string hostile = "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK(problem_code(reject(hostile).kind) == "invalid-json");
}

TEST_CASE("intent: operation_id") {
  check_error(R"("operation_id":"")", "operation_id", "empty");
  check_error(R"("operation_id":")" + std::string(129, 'a') + "\"", "operation_id", "too_long");
  CHECK(accept(body_with(R"("operation_id":")" + std::string(128, 'a') + "\"")).operation_id.size() == 128);
  check_error(R"("operation_id":"a b")", "operation_id", "invalid_format");
  check_error(R"("operation_id":"a/b")", "operation_id", "invalid_format");
  check_error(R"("operation_id":"caf\u00e9")", "operation_id", "invalid_format");
  check_error(R"("operation_id":"a\nb")", "operation_id", "invalid_format");
  check_error(R"("operation_id":42)", "operation_id", "wrong_type");
  check_error(R"("operation_id":["a"])", "operation_id", "wrong_type");
  // "." and ".." are path segments clients normalise away: their Location could not be fetched.
  check_error(R"("operation_id":".")", "operation_id", "invalid_format");
  check_error(R"("operation_id":"..")", "operation_id", "invalid_format");
  CHECK(accept(body_with(R"("operation_id":"...")")).operation_id == "...");
  CHECK(accept(body_with(R"("operation_id":".a")")).operation_id == ".a");
  CHECK(only_error(R"({"amount_minor":1,"currency":"EUR","payee":"p","source":"s"})", "..").field ==
        "Idempotency-Key");
  const FieldError e = only_error(body_with("", {"operation_id"}));
  CHECK(e.field == "operation_id");
  CHECK(e.code == "required");
  CHECK(only_error(body_with(R"("operation_id":null)")).code == "required");
}

TEST_CASE("intent: Idempotency-Key header") {
  // Header alone supplies the operation_id.
  CHECK(accept(body_with("", {"operation_id"}), "key-1").operation_id == "key-1");
  // Structured-field string form (the IETF draft) is unquoted.
  CHECK(accept(body_with("", {"operation_id"}), "\"key-1\"").operation_id == "key-1");
  // Both, equal: fine.
  CHECK(accept(body_with(""), "order-1").operation_id == "order-1");
  CHECK(accept(body_with(""), "\"order-1\"").operation_id == "order-1");
  // Both, different: 400, even when other fields are bad too.
  for (std::string_view body : {body_with(""), body_with(R"("amount_minor":-1)")}) {
    const IntentRejection r = reject(body, "order-2");
    CHECK(problem_code(r.kind) == "idempotency-key-mismatch");
  }
  // A header-supplied id must itself be valid; the error names the header.
  for (std::string_view bad : {std::string_view("a b"), std::string_view(""), std::string_view("\xc3\xa9")}) {
    const FieldError e = only_error(body_with("", {"operation_id"}), bad);
    CHECK(e.field == "Idempotency-Key");
    CHECK(e.code == (bad.empty() ? "empty" : "invalid_format"));
  }
  CHECK(only_error(body_with("", {"operation_id"}), std::string(129, 'k')).code == "too_long");
}

TEST_CASE("intent: amount_minor") {
  CHECK(accept(body_with(R"("amount_minor":1)")).amount_minor == 1);
  CHECK(accept(body_with(R"("amount_minor":9007199254740991)")).amount_minor == max_amount_minor);
  for (std::string_view v : {"0", "-0", "-1", "-9007199254740991", "9007199254740992", "9223372036854775807",
                             "9223372036854775808", "18446744073709551615", "18446744073709551616",
                             "123456789012345678901234567890", "-123456789012345678901234567890"})
    check_error(R"("amount_minor":)" + std::string(v), "amount_minor", "out_of_range");
  for (std::string_view v : {"100.0", "1e2", "1E2", "1.5", "0.5", "-1.5", "1e400", "-1e400", "1e-400", "100.00e0",
                             "9007199254740991.0"})
    check_error(R"("amount_minor":)" + std::string(v), "amount_minor", "not_integer");
  for (std::string_view v : {R"("100")", "true", "[100]", R"({"v":100})"})
    check_error(R"("amount_minor":)" + std::string(v), "amount_minor", "wrong_type");
  check_error(R"("amount_minor":null)", "amount_minor", "required");
  CHECK(only_error(body_with("", {"amount_minor"})).code == "required");
}

TEST_CASE("intent: currency") {
  CHECK(accept(body_with(R"("currency":"JPY")")).currency == "JPY");
  CHECK(accept(body_with(R"("currency":"CNY")")).currency == "CNY");
  check_error(R"("currency":"usd")", "currency", "invalid_format");
  check_error(R"("currency":"Usd")", "currency", "invalid_format");
  check_error(R"("currency":"USDX")", "currency", "invalid_format");
  check_error(R"("currency":"US")", "currency", "invalid_format");
  check_error(R"("currency":"U$D")", "currency", "invalid_format");
  check_error(R"("currency":"")", "currency", "empty");
  check_error(R"("currency":"ABC")", "currency", "unknown_currency");
  check_error(R"("currency":"XXX")", "currency", "unknown_currency");
  check_error(R"("currency":"XTS")", "currency", "unknown_currency");
  check_error(R"("currency":"HRK")", "currency", "unknown_currency");  // withdrawn 2023
  check_error(R"("currency":840)", "currency", "wrong_type");
  CHECK(only_error(body_with("", {"currency"})).code == "required");
}

TEST_CASE("intent: payee and source") {
  for (std::string_view f : {"payee", "source"}) {
    const std::string q = "\"" + std::string(f) + "\":";
    check_error(q + R"("")", f, "empty");
    // 255 bytes: the limit the sim vendor shares (max_payee_source_bytes).
    check_error(q + "\"" + std::string(256, 'x') + "\"", f, "too_long");
    CHECK(!accept(body_with(q + "\"" + std::string(255, 'x') + "\"")).payee.empty());
    check_error(q + R"("a\u0000b")", f, "invalid_format");
    check_error(q + R"("a\tb")", f, "invalid_format");
    check_error(q + R"("a\u007fb")", f, "invalid_format");
    check_error(q + R"("a\u0085b")", f, "invalid_format");  // C1 NEL
    check_error(q + "7", f, "wrong_type");
    check_error(q + "null", f, "required");
    CHECK(only_error(body_with("", {f})).code == "required");
  }
  // too_long counts bytes: 127 two-byte characters are 254 bytes, 128 (256 bytes) are over.
  std::string e127, e128;
  for (int i = 0; i < 127; ++i) e127 += "\u00e9";
  e128 = e127 + "\u00e9";
  CHECK(accept(body_with(R"("payee":")" + e127 + "\"")).payee == e127);
  check_error(R"("payee":")" + e128 + "\"", "payee", "too_long");
}

TEST_CASE("intent: a source that looks like a card number is 422 raw-card-data, never echoed") {
  for (std::string pan : {"4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111",
                          "5555555555554444", "378282246310005", "6011111111111117",
                          "4222222222222", "6304000000000000000"}) {
    IntentRejection r = reject(body_with(R"("source":")" + pan + "\""));
    CHECK_MESSAGE(problem_code(r.kind) == "raw-card-data", pan);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].field == "source");
    CHECK(r.errors[0].code == "raw_card_data");
    // Nothing in the answer repeats the number, in any of its spellings.
    std::string digits;
    for (char c : pan) if (c >= '0' && c <= '9') digits += c;
    for (const std::string& text : {r.detail, r.errors[0].message}) {
      CHECK(text.find(pan) == std::string::npos);
      CHECK(text.find(digits.substr(0, 6)) == std::string::npos);
    }
    // Whatever else is wrong with the body, the card number decides the answer.
    CHECK(problem_code(reject(R"({"operation_id":"x y","amount_minor":0,"currency":"EUR","payee":"p","source":")" + pan + "\"}").kind) ==
          "raw-card-data");
  }
  // Not card numbers: the Luhn check fails, too few or too many digits, other characters.
  for (std::string ok : {"4111111111111112", "411111111111", "41111111111111111111", "tok_4111111111111111",
                         "4111.1111.1111.1111", "tok_ok"})
    CHECK_MESSAGE(accept(body_with(R"("source":")" + ok + "\"")).source == ok, ok);
  // payee is not a card field.
  CHECK(accept(body_with(R"("payee":"4111111111111111")")).payee == "4111111111111111");
}

TEST_CASE("looks_like_pan") {
  CHECK(looks_like_pan("4111111111111111"));
  CHECK(looks_like_pan("4111 1111-1111 1111"));
  CHECK(looks_like_pan("0000000000000"));  // 13 zeros pass Luhn: refused, safe side
  CHECK_FALSE(looks_like_pan(""));
  CHECK_FALSE(looks_like_pan("    "));
  CHECK_FALSE(looks_like_pan("4111111111111111 x"));
  CHECK_FALSE(looks_like_pan("79927398713"));  // Luhn-valid, but 11 digits
}

TEST_CASE("intent: provider") {
  CHECK(accept(body_with(R"("provider":"stripe_eu-2")")).provider == "stripe_eu-2");
  CHECK(accept(body_with(R"("provider":"not-configured-is-checked-later")")).provider);
  check_error(R"("provider":"")", "provider", "empty");
  check_error(R"("provider":"Sim")", "provider", "invalid_format");
  check_error(R"("provider":"a.b")", "provider", "invalid_format");
  check_error(R"("provider":")" + std::string(65, 'p') + "\"", "provider", "too_long");
  CHECK(accept(body_with(R"("provider":")" + std::string(64, 'p') + "\"")).provider->size() == 64);
  check_error(R"("provider":1)", "provider", "wrong_type");
}

TEST_CASE("intent: description") {
  CHECK(accept(body_with(R"("description":"")")).description == "");
  CHECK(accept(body_with(R"("description":")" + std::string(1000, 'd') + "\"")).description->size() == 1000);
  check_error(R"("description":")" + std::string(1001, 'd') + "\"", "description", "too_long");
  check_error(R"("description":{"a":"b"})", "description", "wrong_type");
}

TEST_CASE("intent: metadata") {
  std::string twenty;
  for (int i = 0; i < 20; ++i) twenty += (i ? "," : "") + ("\"k" + std::to_string(i) + "\":\"v\"");
  const std::string twenty_one = twenty + ",\"k20\":\"v\"";
  CHECK(accept(body_with(R"("metadata":{)" + twenty + "}")).metadata.size() == 20);
  check_error(R"("metadata":{)" + twenty_one + "}", "metadata", "too_many");
  check_error(R"("metadata":{"":"v"})", "metadata", "empty");
  check_error(R"("metadata":{")" + std::string(41, 'k') + R"(":"v"})", "metadata." + std::string(41, 'k'), "too_long");
  CHECK(accept(body_with(R"("metadata":{")" + std::string(40, 'k') + R"(":"v"})")).metadata.size() == 1);
  check_error(R"("metadata":{"k":")" + std::string(501, 'v') + "\"}", "metadata.k", "too_long");
  // Lengths are characters: 500 three-byte characters fit.
  std::string cjk;
  for (int i = 0; i < 500; ++i) cjk += "\u682a";
  CHECK(accept(body_with(R"("metadata":{"k":")" + cjk + "\"}")).metadata.at("k") == cjk);
  check_error(R"("metadata":{"order":{"id":"1"}})", "metadata.order", "wrong_type");
  check_error(R"("metadata":{"order":1})", "metadata.order", "wrong_type");
  check_error(R"("metadata":{"order":null})", "metadata.order", "wrong_type");
  check_error(R"("metadata":{"order":["1"]})", "metadata.order", "wrong_type");
  check_error(R"("metadata":"order=1")", "metadata", "wrong_type");
  check_error(R"("metadata":[])", "metadata", "wrong_type");
}

TEST_CASE("intent: unknown fields are named") {
  check_error(R"("amount":1000)", "amount", "unknown_field");
  check_error(R"("operation_type":"refund")", "operation_type", "unknown_field");
  check_error(R"("Currency":"USD")", "Currency", "unknown_field");
  const IntentRejection r = reject(body_with(R"("descripton":"typo","extra":null)"));
  REQUIRE(r.errors.size() == 2);
  CHECK(r.errors[0].field == "descripton");
  CHECK(r.errors[1].field == "extra");
  CHECK(r.errors[1].code == "unknown_field");
  CHECK(r.detail.find("descripton") != std::string::npos);
}

TEST_CASE("intent: all field errors are reported together") {
  const IntentRejection r = reject(
      R"({"operation_id":"a b","amount_minor":100.0,"currency":"usd","payee":"","source":7,)"
      R"("provider":"BAD","description":5,"metadata":{"x":1},"colour":"red"})");
  CHECK(problem_code(r.kind) == "invalid-request");
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& e : r.errors) got.emplace_back(e.field, e.code);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"operation_id", "invalid_format"}, {"amount_minor", "not_integer"}, {"currency", "invalid_format"},
      {"payee", "empty"},                 {"source", "wrong_type"},       {"provider", "invalid_format"},
      {"description", "wrong_type"},      {"metadata.x", "wrong_type"},   {"colour", "unknown_field"}};
  CHECK(got == want);

  const IntentRejection missing = reject("{}");
  CHECK(missing.errors.size() == 5);
  for (const auto& e : missing.errors) CHECK(e.code == "required");
}

TEST_CASE("valid_operation_id") {
  CHECK(valid_operation_id("a"));
  CHECK(valid_operation_id("ABC-xyz_09.:-"));
  CHECK(valid_operation_id(std::string(128, 'z')));
  CHECK_FALSE(valid_operation_id(""));
  CHECK_FALSE(valid_operation_id(std::string(129, 'z')));
  CHECK_FALSE(valid_operation_id("a b"));
  CHECK_FALSE(valid_operation_id("a/b"));
  CHECK_FALSE(valid_operation_id("a%2Fb"));
  CHECK_FALSE(valid_operation_id("\xc3\xa9"));
  CHECK_FALSE(valid_operation_id("."));
  CHECK_FALSE(valid_operation_id(".."));
  CHECK(valid_operation_id("..."));
}

TEST_CASE("valid_currency: active ISO 4217 codes only; the list is sorted and unique") {
  for (std::string_view c : {"USD", "EUR", "JPY", "CNY", "GBP", "CHF", "KWD", "XOF", "XAF", "ZWG", "SLE", "VES"})
    CHECK_MESSAGE(valid_currency(c), c);
  for (std::string_view c : {"usd", "US", "USDD", "", "ABC", "XXX", "XTS", "XAU", "XDR", "BOV", "CLF", "USN",
                             "HRK", "ZWL", "CUC", "VEF"})
    CHECK_FALSE_MESSAGE(valid_currency(c), c);
  const auto codes = currency_codes();
  CHECK(codes.size() > 150);
  CHECK(std::adjacent_find(codes.begin(), codes.end(), std::greater_equal<>()) == codes.end());
  for (auto c : codes) CHECK(valid_currency(c));
}

}  // namespace
}  // namespace payorch
