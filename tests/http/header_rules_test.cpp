#include "http/header_rules.h"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <utility>

namespace {

using payorch::http::check_request_header;
using payorch::http::Request;
namespace bhttp = boost::beast::http;

Request header(std::initializer_list<std::pair<std::string, std::string>> fields,
               unsigned version = 11) {
  Request req{bhttp::verb::post, "/v1/payments", version};
  req.set(bhttp::field::host, "127.0.0.1");
  for (const auto& [name, value] : fields) req.insert(name, value);
  return req;
}

// The refusal's status, or 0 when the header is accepted.
unsigned refusal_status(const Request& req) {
  const auto refusal = check_request_header(req);
  return refusal ? payorch::http::problem_type(refusal->problem).status : 0;
}

}  // namespace

TEST_CASE("header rules: exactly chunked, or a Content-Length, frames a body") {
  CHECK(refusal_status(header({{"Content-Length", "12"}})) == 0);
  CHECK(refusal_status(header({})) == 0);
  for (const char* te : {"chunked", "CHUNKED", "  Chunked\t", "chunked "}) {
    CAPTURE(te);
    CHECK(refusal_status(header({{"Transfer-Encoding", te}})) == 0);
  }
}

TEST_CASE("header rules: a transfer coding that leaves the body's end unknown is a 400") {
  for (const char* te : {"identity", "xchunked", "chunked, identity", "chunked, chunked",
                         "chunked,chunked", "", " , ", "gzip", "chunked;x=1, gzip"}) {
    CAPTURE(te);
    const auto refusal = check_request_header(header({{"Transfer-Encoding", te}}));
    REQUIRE(refusal.has_value());
    CHECK(payorch::http::problem_type(refusal->problem).status == 400);
    CHECK(payorch::http::problem_type(refusal->problem).code == "bad-request");
  }
  // Two lines are one list: chunked twice.
  CHECK(refusal_status(header({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}})) ==
        400);
  CHECK(refusal_status(header({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "identity"}})) ==
        400);
}

TEST_CASE("header rules: a coding payorchd does not implement in front of chunked is a 501") {
  for (const auto& req : {header({{"Transfer-Encoding", "gzip, chunked"}}),
                          header({{"Transfer-Encoding", "identity,chunked"}}),
                          header({{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}})}) {
    const auto refusal = check_request_header(req);
    REQUIRE(refusal.has_value());
    CHECK(payorch::http::problem_type(refusal->problem).status == 501);
    CHECK(payorch::http::problem_type(refusal->problem).code == "unsupported-transfer-encoding");
  }
}

TEST_CASE("header rules: Content-Length with Transfer-Encoding, or TE on HTTP/1.0, is a 400") {
  CHECK(refusal_status(header({{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}})) == 400);
  CHECK(refusal_status(header({{"Transfer-Encoding", "identity"}, {"Content-Length", "5"}})) == 400);
  CHECK(refusal_status(header({{"Transfer-Encoding", "chunked"}}, 10)) == 400);
}

TEST_CASE("header rules: an HTTP/1.1 request needs one Host; HTTP/1.0 none") {
  Request no_host{bhttp::verb::get, "/healthz", 11};
  const auto refusal = check_request_header(no_host);
  REQUIRE(refusal.has_value());
  CHECK(payorch::http::problem_type(refusal->problem).status == 400);
  CHECK(payorch::http::problem_type(refusal->problem).code == "bad-request");
  Request old{bhttp::verb::get, "/healthz", 10};
  CHECK_FALSE(check_request_header(old).has_value());
  CHECK(refusal_status(header({{"Host", "127.0.0.1"}})) == 400);  // a second Host line
}

TEST_CASE("header rules: a field read as one value may not come twice") {
  for (const char* name : {"Authorization", "authorization", "Idempotency-Key", "Content-Type",
                           "Payorch-Operator", "payorch-operator"}) {
    CAPTURE(name);
    CHECK(refusal_status(header({{name, "a"}})) == 0);
    CHECK(refusal_status(header({{name, "a"}, {name, "b"}})) == 400);
    CHECK(refusal_status(header({{name, "a"}, {name, "a"}})) == 400);
  }
  // List fields may repeat.
  CHECK(refusal_status(header({{"Prefer", "wait=5"}, {"Prefer", "return=minimal"}})) == 0);
  CHECK(refusal_status(header({{"Accept", "a/b"}, {"Accept", "c/d"}})) == 0);
}
