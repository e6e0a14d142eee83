#include "core/digest.h"

#include <doctest/doctest.h>

#include <bit>
#include <boost/json/parse.hpp>
#include <cstdint>
#include <cstdlib>

#include "core/intent.h"

namespace payorch {
namespace {

std::string canon(std::string_view json_text) { return jcs_canonicalize(boost::json::parse(json_text)); }

std::string canon_bits(std::uint64_t bits) { return jcs_canonicalize(boost::json::value(std::bit_cast<double>(bits))); }

Intent sample_intent() {
  Intent i;
  i.operation_id = "order-1";
  i.amount_minor = 12345;
  i.currency = "EUR";
  i.payee = "Zo\u00eb \u682a\u5f0f\u4f1a\u793e";  // "Zoë 株式会社"
  i.source = "tok_ok";
  return i;
}

Intent parsed(std::string_view body) {
  auto r = parse_intent(body, std::nullopt);
  REQUIRE(std::holds_alternative<Intent>(r));
  return std::get<Intent>(r);
}

TEST_CASE("JCS: RFC 8785 §3.2.2 sample (numbers, literals, string escapes)") {
  const char* input = R"({
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  })";
  boost::json::value v = boost::json::parse(input);
  // Boost 1.81's parser is not correctly rounded for every decimal (333333333.33333329 comes
  // out one ulp low), so the numbers are re-read with strtod: what is under test here is the
  // serialisation. (No digest covers a parsed double: amounts are integers.)
  auto& numbers = v.as_object()["numbers"].as_array();
  const char* texts[] = {"333333333.33333329", "1E30", "4.50", "2e-3", "0.000000000000000000000000001"};
  for (std::size_t i = 0; i < numbers.size(); ++i) numbers[i] = std::strtod(texts[i], nullptr);
  CHECK(jcs_canonicalize(v) ==
        "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
        "\"string\":\"\u20ac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

TEST_CASE("JCS: RFC 8785 §3.2.3 member order is by UTF-16 code units") {
  const char* input = R"({
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  })";
  // U+1F600 is the surrogate pair D83D DE00, so it sorts before U+FB33 although its UTF-8
  // bytes (F0 ..) sort after those of U+FB33 (EF ..).
  CHECK(canon(input) ==
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\","
        "\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\","
        "\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}");
}

TEST_CASE("JCS: UTF-16 order differs from UTF-8 byte order above U+FFFF") {
  // UTF-16: D800 DC00 < E000 < FFFF. UTF-8 bytes would give EE.. < EF.. < F0.. instead.
  CHECK(canon(R"({"\uffff":1,"\ue000":3,"\ud800\udc00":2})") == "{\"\U00010000\":2,\"\ue000\":3,\"\uffff\":1}");
}

TEST_CASE("JCS: nested objects and arrays, no whitespace") {
  CHECK(canon(R"( { "b" : [ 1 , { "d" : 1 , "c" : 2 } ] , "a" : { } , "c" : [ ] } )") ==
        R"({"a":{},"b":[1,{"c":2,"d":1}],"c":[]})");
}

TEST_CASE("JCS: string escapes") {
  CHECK(canon(R"("\b\f\n\r\t\"\\\/")") == R"("\b\f\n\r\t\"\\/")");
  CHECK(canon(R"("\u0000\u0001\u001f\u007f")") == "\"\\u0000\\u0001\\u001f\x7f\"");
  CHECK(canon(R"("\u00e9\u2028\ud83d\ude00")") == "\"\u00e9\u2028\U0001F600\"");  // literal UTF-8
}

TEST_CASE("JCS: numbers per ECMAScript Number::toString (RFC 8785 Appendix B)") {
  CHECK(canon_bits(0x0000000000000000) == "0");
  CHECK(canon_bits(0x8000000000000000) == "0");  // -0
  CHECK(canon_bits(0x0000000000000001) == "5e-324");
  CHECK(canon_bits(0x8000000000000001) == "-5e-324");
  CHECK(canon_bits(0x7fefffffffffffff) == "1.7976931348623157e+308");
  CHECK(canon_bits(0xffefffffffffffff) == "-1.7976931348623157e+308");
  CHECK(canon_bits(0x4340000000000000) == "9007199254740992");
  CHECK(canon_bits(0xc340000000000000) == "-9007199254740992");
  CHECK(canon_bits(0x4430000000000000) == "295147905179352830000");
  CHECK(canon_bits(0x44b52d02c7e14af5) == "9.999999999999997e+22");
  CHECK(canon_bits(0x44b52d02c7e14af6) == "1e+23");
  CHECK(canon_bits(0x44b52d02c7e14af7) == "1.0000000000000001e+23");
  CHECK(canon_bits(0x444b1ae4d6e2ef4e) == "999999999999999700000");
  CHECK(canon_bits(0x444b1ae4d6e2ef4f) == "999999999999999900000");
  CHECK(canon_bits(0x444b1ae4d6e2ef50) == "1e+21");
  CHECK(canon_bits(0x3eb0c6f7a0b5ed8c) == "9.999999999999997e-7");
  CHECK(canon_bits(0x3eb0c6f7a0b5ed8d) == "0.000001");
  CHECK(canon_bits(0x41b3de4355555553) == "333333333.3333332");
  CHECK(canon_bits(0x41b3de4355555554) == "333333333.33333325");
  CHECK(canon_bits(0x41b3de4355555555) == "333333333.3333333");
  CHECK(canon_bits(0x41b3de4355555556) == "333333333.3333334");
  CHECK(canon_bits(0x41b3de4355555557) == "333333333.33333343");
  CHECK(canon_bits(0xbecbf647612f3696) == "-0.0000033333333333333333");
  CHECK(canon_bits(0x43143ff3c1cb0959) == "1424953923781206.2");
}

TEST_CASE("JCS: more number forms") {
  CHECK(jcs_canonicalize(boost::json::value(1e-7)) == "1e-7");
  CHECK(jcs_canonicalize(boost::json::value(1e21)) == "1e+21");
  CHECK(jcs_canonicalize(boost::json::value(1e20)) == "100000000000000000000");
  CHECK(jcs_canonicalize(boost::json::value(100.0)) == "100");
  CHECK(jcs_canonicalize(boost::json::value(-1.5)) == "-1.5");
  CHECK(jcs_canonicalize(boost::json::value(0.1)) == "0.1");
  CHECK(jcs_canonicalize(boost::json::value(123e-20)) == "1.23e-18");
  // Integers print as themselves up to 2^53; beyond, as the double JavaScript would hold.
  CHECK(jcs_canonicalize(boost::json::value(std::int64_t{9007199254740991})) == "9007199254740991");
  CHECK(jcs_canonicalize(boost::json::value(std::int64_t{-42})) == "-42");
  CHECK(jcs_canonicalize(boost::json::value(std::int64_t{9007199254740993})) == "9007199254740992");
  CHECK(jcs_canonicalize(boost::json::value(std::uint64_t{18446744073709551615u})) == "18446744073709552000");
  CHECK(jcs_canonicalize(boost::json::value(INT64_MIN)) == "-9223372036854776000");
}

TEST_CASE("sha256_hex: known vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("request_digest: fixed value for a known intent (computed with sha256sum)") {
  // printf '%s' '{"amount_minor":12345,"currency":"EUR","operation_type":"payment","payee":"Zoë 株式会社","source":"tok_ok"}' | sha256sum
  const Intent i = sample_intent();
  CHECK(jcs_canonicalize(digest_fields(i)) ==
        "{\"amount_minor\":12345,\"currency\":\"EUR\",\"operation_type\":\"payment\","
        "\"payee\":\"Zo\u00eb \u682a\u5f0f\u4f1a\u793e\",\"source\":\"tok_ok\"}");
  CHECK(request_digest(i) == "sha256:c4e8482ae069e874e753f210c961d226824c342d5594214c6a4e546bea858fde");

  Intent with_provider = i;
  with_provider.provider = "sim";
  CHECK(request_digest(with_provider) ==
        "sha256:475566f5fde46b5f4cdbcbf2085d271ec5cc499e4103f9ab3db7751ce1615635");
}

TEST_CASE("request_digest: member order of the body does not matter") {
  const Intent a = parsed(R"({"operation_id":"o1","amount_minor":500,"currency":"USD","payee":"acme","source":"tok_ok"})");
  const Intent b = parsed(R"({"source":"tok_ok","payee":"acme","currency":"USD","amount_minor":500,"operation_id":"o1"})");
  CHECK(request_digest(a) == request_digest(b));
  CHECK(request_digest(a).rfind("sha256:", 0) == 0);
  CHECK(request_digest(a).size() == 7 + 64);
}

TEST_CASE("request_digest: Unicode payee is stable and distinct") {
  Intent i = sample_intent();
  const std::string d1 = request_digest(i);
  CHECK(request_digest(i) == d1);
  i.payee = "Zo\u00eb \u682a\u5f0f\u4f1a\u793e \U0001F600";  // with an emoji
  const std::string d2 = request_digest(i);
  CHECK(d2 != d1);
  CHECK(request_digest(i) == d2);
  // The same payee arriving escaped in JSON gives the same digest as raw UTF-8.
  const Intent esc = parsed(R"({"operation_id":"o","amount_minor":12345,"currency":"EUR",)"
                            R"("payee":"Zo\u00eb \u682a\u5f0f\u4f1a\u793e \ud83d\ude00","source":"tok_ok"})");
  CHECK(request_digest(esc) == d2);
}

TEST_CASE("request_digest: escapes in fields are canonical") {
  Intent i = sample_intent();
  i.payee = "a\"b\\c/d";
  CHECK(jcs_canonicalize(digest_fields(i)).find(R"("payee":"a\"b\\c/d")") != std::string::npos);
  const Intent esc = parsed(R"({"operation_id":"o","amount_minor":12345,"currency":"EUR",)"
                            R"("payee":"\u0061\"b\u005cc\/d","source":"tok_ok"})");
  CHECK(request_digest(esc) == request_digest(i));
}

TEST_CASE("request_digest: provider present vs absent changes it; description and metadata do not") {
  Intent i = sample_intent();
  const std::string base = request_digest(i);
  i.provider = "sim";
  CHECK(request_digest(i) != base);
  i.provider.reset();
  i.description = "a description";
  i.metadata = {{"order", "42"}};
  CHECK(request_digest(i) == base);
  i.operation_id = "another-operation";  // identity, not part of the digest
  CHECK(request_digest(i) == base);
  i.amount_minor = 12346;
  CHECK(request_digest(i) != base);
}

TEST_CASE("digest_fields: exactly the intent-determining members") {
  Intent i = sample_intent();
  auto o = digest_fields(i);
  CHECK(o.size() == 5);
  CHECK(o.at("operation_type") == "payment");
  CHECK(o.at("amount_minor").as_int64() == 12345);
  CHECK_FALSE(o.contains("provider"));
  i.provider = "sim";
  CHECK(digest_fields(i).at("provider") == "sim");
}

// printf '%s' '{"amount_minor":2500,"operation_type":"refund","payment_id":"pay_01HZY3M5Q8V7K2J9X4N6B1C0DE"}' | sha256sum
TEST_CASE("refund_request_digest: fixed value over operation_type, payment_id and amount_minor") {
  const std::string pay = "pay_01HZY3M5Q8V7K2J9X4N6B1C0DE";
  CHECK(jcs_canonicalize(refund_digest_fields(pay, 2500)) ==
        R"({"amount_minor":2500,"operation_type":"refund","payment_id":"pay_01HZY3M5Q8V7K2J9X4N6B1C0DE"})");
  CHECK(refund_request_digest(pay, 2500) ==
        "sha256:048b3e9e4f0b4cbc3dd1b5b4e15187c3a5831626585eb634e992f6cbf3c9f1d5");
  CHECK(refund_request_digest(pay, max_amount_minor) ==
        "sha256:405a11a54d3f3779d3dbcd90d2a35a9fbba9382d0ab371d3a2d84fa1d11d53f1");
  // Another amount or another payment is another intent.
  CHECK(refund_request_digest(pay, 2501) != refund_request_digest(pay, 2500));
  CHECK(refund_request_digest("pay_01HZY3M5Q8V7K2J9X4N6B1C0DF", 2500) != refund_request_digest(pay, 2500));
  CHECK(refund_digest_fields(pay, 2500).size() == 3);
}

}  // namespace
}  // namespace payorch
