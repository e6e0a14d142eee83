#include <doctest/doctest.h>

#include <string>

#include "core/intent.h"

namespace payorch {
namespace {

RefundIntent accept(std::string_view body, std::optional<std::string_view> header = std::nullopt) {
  auto r = parse_refund_intent(body, header);
  if (auto* rej = std::get_if<IntentRejection>(&r)) {
    std::string errors;
    for (const auto& e : rej->errors) errors += " " + e.field + "/" + e.code;
    FAIL_CHECK("rejected: " << problem_code(rej->kind) << ": " << rej->detail << errors << " body=" << body);
    return {};
  }
  return std::get<RefundIntent>(r);
}

IntentRejection reject(std::string_view body, std::optional<std::string_view> header = std::nullopt) {
  auto r = parse_refund_intent(body, header);
  if (!std::holds_alternative<IntentRejection>(r)) {
    FAIL_CHECK("accepted: " << body);
    return {};
  }
  return std::get<IntentRejection>(r);
}

// The single field error a body with one bad field gets (a 422).
FieldError only_error(std::string_view body, std::optional<std::string_view> header = std::nullopt) {
  const IntentRejection r = reject(body, header);
  CHECK(problem_code(r.kind) == "invalid-request");
  REQUIRE_MESSAGE(r.errors.size() == 1, body);
  return r.errors[0];
}

}  // namespace

TEST_CASE("refund intent: a valid body with every field") {
  const RefundIntent i =
      accept(R"({"operation_id":"rf-1","amount_minor":2500,"reason":"damaged","metadata":{"ticket":"T-9"}})");
  CHECK(i.operation_type == "refund");
  CHECK(i.operation_id == "rf-1");
  CHECK(i.amount_minor == 2500);
  CHECK(i.reason == std::optional<std::string>("damaged"));
  CHECK(i.metadata.at("ticket") == "T-9");

  const RefundIntent minimal = accept(R"({"operation_id":"rf-2","amount_minor":1,"reason":null})");
  CHECK_FALSE(minimal.reason.has_value());
  CHECK(minimal.metadata.empty());
}

TEST_CASE("refund intent: operation_id follows the payment rules, header included") {
  CHECK(accept(R"({"amount_minor":5})", "rf-h").operation_id == "rf-h");
  CHECK(accept(R"({"amount_minor":5})", "\"rf-q\"").operation_id == "rf-q");
  CHECK(problem_code(reject(R"({"operation_id":"a","amount_minor":5})", "b").kind) == "idempotency-key-mismatch");
  for (const char* bad : {R"(".")", R"("..")", R"("a/b")", R"("")"}) {
    const std::string body = std::string(R"({"operation_id":)") + bad + R"(,"amount_minor":5})";
    const FieldError e = only_error(body);
    CHECK_MESSAGE(e.field == "operation_id", body);
    CHECK_MESSAGE((e.code == "invalid_format" || e.code == "empty"), body);
  }
  CHECK(only_error(R"({"operation_id":")" + std::string(129, 'a') + R"(","amount_minor":5})").code == "too_long");
  CHECK(only_error(R"({"amount_minor":5})").code == "required");
  CHECK(only_error(R"({"amount_minor":5})", "..").field == "Idempotency-Key");
}

TEST_CASE("refund intent: amount_minor is an integer in 1 .. 2^53-1") {
  CHECK(accept(R"({"operation_id":"r","amount_minor":9007199254740991})").amount_minor == max_amount_minor);
  const std::pair<const char*, const char*> cases[] = {
      {"0", "out_of_range"},        {"-1", "out_of_range"},      {"9007199254740992", "out_of_range"},
      {"1.0", "not_integer"},       {"1e2", "not_integer"},      {R"("100")", "wrong_type"},
  };
  for (const auto& c : cases) {
    const std::string body = std::string(R"({"operation_id":"r","amount_minor":)") + c.first + "}";
    const FieldError e = only_error(body);
    CHECK_MESSAGE(e.field == "amount_minor", body);
    CHECK_MESSAGE(e.code == c.second, body << " -> " << e.code);
  }
  CHECK(only_error(R"({"operation_id":"r"})").code == "required");
}

TEST_CASE("refund intent: reason and metadata have the payment's limits") {
  const std::string ok_reason(1000, 'x');
  CHECK(accept(R"({"operation_id":"r","amount_minor":5,"reason":")" + ok_reason + R"("})").reason->size() == 1000);
  CHECK(only_error(R"({"operation_id":"r","amount_minor":5,"reason":")" + ok_reason + R"(x"})").code == "too_long");
  CHECK(only_error(R"({"operation_id":"r","amount_minor":5,"reason":5})").code == "wrong_type");

  std::string many = R"({"operation_id":"r","amount_minor":5,"metadata":{)";
  for (int k = 0; k < 21; ++k) many += (k ? "," : "") + std::string("\"k") + std::to_string(k) + "\":\"v\"";
  many += "}}";
  CHECK(only_error(many).code == "too_many");
  CHECK(only_error(R"({"operation_id":"r","amount_minor":5,"metadata":{"a":1}})").field == "metadata.a");
}

TEST_CASE("refund intent: payment fields and typos are unknown fields, all errors listed") {
  for (const char* field : {"currency", "payment_id", "payee", "source", "provider", "description", "amount"}) {
    const std::string body = std::string(R"({"operation_id":"r","amount_minor":5,")") + field + R"(":"x"})";
    const FieldError e = only_error(body);
    CHECK_MESSAGE(e.field == field, body);
    CHECK_MESSAGE(e.code == "unknown_field", body);
  }
  const IntentRejection r = reject(R"({"operation_id":".","amount_minor":0,"currency":"EUR"})");
  CHECK(r.errors.size() == 3);
  CHECK(r.detail == "3 invalid fields: operation_id, amount_minor, currency");
  CHECK(problem_code(reject("{").kind) == "invalid-json");
  CHECK(problem_code(reject("[]").kind) == "invalid-request");
}

}  // namespace payorch
