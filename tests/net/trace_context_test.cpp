// W3C Trace Context for vendor calls (net/trace_context.h): which traceparent values are
// accepted, and that a request started inside an OutgoingTraceScope reaches the vendor with
// `traceparent: 00-<trace id>-<fresh span id>-<flags>` — and one started outside it without.
#include "net/trace_context.h"

#include <doctest/doctest.h>

#include <boost/beast/http.hpp>

#include <string>

#include "net/client_fixture.h"
#include "net/fake_server.h"

namespace {

using payorch::net::OutgoingTrace;
using payorch::net::OutgoingTraceScope;
using payorch::net::parse_traceparent;
using payorch::test::ClientFixture;
using payorch::test::FakeServer;
using payorch::test::Reply;
using payorch::test::get;

constexpr const char* trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";

}  // namespace

TEST_CASE("parse_traceparent: version 00, lowercase hex, ids not all zero") {
  const auto tp = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  REQUIRE(tp.has_value());
  CHECK(tp->trace_id == trace_id);
  CHECK(tp->parent_id == "00f067aa0ba902b7");
  CHECK(tp->flags == "01");
  CHECK(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->flags == "00");
  for (const char* bad : {
           "",
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // trace id all zero
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // parent id all zero
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // upper case
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // another version
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",    // short trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",    // short flags
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",   // not hex
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // extra field
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
           " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    CHECK_MESSAGE(!parse_traceparent(bad), bad);
}

TEST_CASE("a vendor call inside an OutgoingTraceScope carries the trace with a new span id") {
  FakeServer server([](const payorch::http::Request&) {
    return Reply::with(payorch::http::Response{boost::beast::http::status::ok, 11});
  });
  ClientFixture f;
  {
    const OutgoingTraceScope scope(OutgoingTrace{trace_id, "01"});
    CHECK(payorch::net::current_outgoing_trace().has_value());
    f.client.request(get(server.base_url() + "/a"), [](payorch::net::HttpResult) {});
    f.client.request(get(server.base_url() + "/b"), [](payorch::net::HttpResult) {});
  }
  CHECK_FALSE(payorch::net::current_outgoing_trace().has_value());
  f.ioc.run();
  f.run(get(server.base_url() + "/c"));  // outside the scope
  {
    // A payment without a trace names none, even inside another's scope.
    const OutgoingTraceScope outer(OutgoingTrace{trace_id, "01"});
    const OutgoingTraceScope none(std::nullopt, std::nullopt);
    CHECK_FALSE(payorch::net::current_outgoing_trace().has_value());
  }
  const auto seen = server.requests();
  REQUIRE(seen.size() == 3);
  std::string spans[2];
  for (int i = 0; i < 2; ++i) {
    const std::string header(seen[i]["traceparent"]);
    CAPTURE(header);
    const auto tp = parse_traceparent(header);
    REQUIRE(tp.has_value());
    CHECK(tp->trace_id == trace_id);
    CHECK(tp->flags == "01");
    spans[i] = tp->parent_id;
  }
  CHECK(spans[0] != spans[1]);
  CHECK(seen[2].find("traceparent") == seen[2].end());
}
