#include "http/problem.h"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <optional>
#include <set>
#include <string>

#include "core/intent.h"
#include "http/not_committed.h"

namespace {

using payorch::http::make_problem;
using payorch::http::Problem;
using payorch::http::problem_catalogue;
using payorch::http::problem_type;
using payorch::store::WriteStatus;
namespace bhttp = boost::beast::http;

std::string type_code(const payorch::http::Response& r) {
  const auto body = boost::json::parse(r.body()).as_object();
  const std::string type(body.at("type").as_string());
  return type.substr(payorch::http::problem_base.size());
}

}  // namespace

TEST_CASE("problem catalogue: codes are unique, statuses are errors, titles are written") {
  std::set<std::string_view> codes;
  for (const auto& type : problem_catalogue) {
    CAPTURE(type.code);
    CHECK(codes.insert(type.code).second);
    CHECK_FALSE(type.code.empty());
    CHECK(type.status >= 400);
    CHECK(type.status <= 599);
    CHECK_FALSE(type.title.empty());
    CHECK(type.retry_after_s >= 0);
    // Retry-After belongs to the "come back later" answers only.
    if (type.retry_after_s > 0) CHECK(type.status == 503);
    CHECK(payorch::http::problem_of_code(type.code) == type.problem);
  }
  CHECK(payorch::http::problem_of_code("no-such-code") == std::nullopt);
}

TEST_CASE("problem catalogue: make_problem answers the entry's status, type, title and Retry-After") {
  for (const auto& type : problem_catalogue) {
    CAPTURE(type.code);
    const auto r = make_problem(type.problem, "what happened", {{"extra", 1}}, 10);
    CHECK(r.result_int() == type.status);
    CHECK(r.version() == 10);
    CHECK(r[bhttp::field::content_type] == "application/problem+json");
    const auto body = boost::json::parse(r.body()).as_object();
    CHECK(type_code(r) == type.code);
    CHECK(body.at("title").as_string() == type.title);
    CHECK(body.at("status").as_int64() == type.status);
    CHECK(body.at("detail").as_string() == "what happened");
    CHECK(body.at("extra").as_int64() == 1);
    if (type.retry_after_s > 0) CHECK(r[bhttp::field::retry_after] == std::to_string(type.retry_after_s));
    else CHECK(r.find(bhttp::field::retry_after) == r.end());
  }
}

TEST_CASE("problem catalogue: the 503s keep their Retry-After") {
  CHECK(problem_type(Problem::storage_busy).retry_after_s == 1);
  CHECK(problem_type(Problem::storage_unavailable).retry_after_s == 1);
  CHECK(problem_type(Problem::not_ready).retry_after_s == 1);
  CHECK(problem_type(Problem::too_many_connections).retry_after_s == 1);
  CHECK(problem_type(Problem::shutting_down).retry_after_s == 5);
  CHECK(problem_type(Problem::intake_paused).retry_after_s == 30);
}

TEST_CASE("problem catalogue: every refusal core's intake names is in it, with its status") {
  using payorch::IntentRejection;
  struct Body {
    std::string text;
    std::optional<std::string_view> key_header;
  };
  const Body bodies[] = {
      {"{", std::nullopt},                                                  // invalid-json
      {"[]", std::nullopt},                                                 // invalid-request
      {R"({"operation_id":"a"})", std::nullopt},                            // field errors
      {R"({"operation_id":"x y","amount_minor":0,"currency":"EUR","payee":"p","source":"4111111111111111"})",
       std::nullopt},                                                       // raw-card-data
      {R"({"operation_id":"op-1"})", std::string_view("op-2")},             // key mismatch
  };
  std::set<std::string> seen;
  for (const Body& body : bodies) {
    CAPTURE(body.text);
    auto r = payorch::parse_intent(body.text, body.key_header);
    REQUIRE(std::holds_alternative<IntentRejection>(r));
    seen.insert(std::string(problem_code(std::get<IntentRejection>(r).kind)));
  }
  CHECK(seen == std::set<std::string>{"invalid-json", "invalid-request", "raw-card-data",
                                      "idempotency-key-mismatch"});
  // Each kind is answered with its catalogue entry: 400 for a body that cannot be read as the
  // intent it claims to be, 422 for one that can and is wrong.
  using Kind = IntentRejection::Kind;
  const std::pair<Kind, unsigned> statuses[] = {{Kind::invalid_json, 400},
                                                {Kind::idempotency_key_mismatch, 400},
                                                {Kind::invalid_request, 422},
                                                {Kind::raw_card_data, 422}};
  for (const auto& entry : statuses) {
    const Kind kind = entry.first;  // not a structured binding: CAPTURE takes it in a lambda
    const unsigned status = entry.second;
    CAPTURE(problem_code(kind));
    const auto problem = payorch::http::problem_of_code(problem_code(kind));
    REQUIRE(problem.has_value());
    CHECK(problem_type(*problem).status == status);
  }
}

TEST_CASE("write status → problem: one mapping for every verdict of the writer") {
  CHECK(payorch::http::not_committed_problem(WriteStatus::busy) == Problem::storage_busy);
  CHECK(payorch::http::not_committed_problem(WriteStatus::stopped) == Problem::shutting_down);
  CHECK(payorch::http::not_committed_problem(WriteStatus::rejected) == Problem::storage_unavailable);
  CHECK(payorch::http::not_committed_problem(WriteStatus::failed) == Problem::storage_unavailable);
  CHECK(payorch::http::not_committed_problem(WriteStatus::committed) == Problem::storage_unavailable);

  const payorch::http::NotCommitted said{.busy = "b", .stopped = "s", .unavailable = "u"};
  struct Case {
    WriteStatus status;
    std::string code, detail;
    unsigned retry_after;
  };
  for (const Case& c : {Case{WriteStatus::busy, "storage-busy", "b", 1},
                        Case{WriteStatus::stopped, "shutting-down", "s", 5},
                        Case{WriteStatus::rejected, "storage-unavailable", "u", 1},
                        Case{WriteStatus::failed, "storage-unavailable", "u", 1},
                        Case{WriteStatus::committed, "storage-unavailable", "u", 1}}) {
    CAPTURE(c.code);
    const auto r = payorch::http::not_committed(c.status, said, 11);
    CHECK(r.result_int() == 503);
    CHECK(type_code(r) == c.code);
    CHECK(boost::json::parse(r.body()).at("detail").as_string() == c.detail);
    CHECK(r[bhttp::field::retry_after] == std::to_string(c.retry_after));
  }
  // A vendor is told only that nothing was recorded.
  const auto cb = payorch::http::callback_not_committed("send it again", 11);
  CHECK(cb.result_int() == 503);
  CHECK(type_code(cb) == "storage-unavailable");
  CHECK(cb[bhttp::field::retry_after] == "1");
}
