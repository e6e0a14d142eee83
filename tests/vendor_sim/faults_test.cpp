#include "vendor_sim/faults.h"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>

namespace {

using namespace payorch::vendor_sim;

Fault parse(const char* json) {
  std::string error;
  auto f = parse_fault_json(boost::json::parse(json), error);
  REQUIRE_MESSAGE(f, error);
  return *f;
}

}  // namespace

TEST_CASE("sim faults: JSON form with defaults") {
  const Fault f = parse(R"({"mode":"latency"})");
  CHECK(f.mode == FaultMode::latency);
  CHECK(f.count == 1);
  CHECK(f.delay_ms == 1000);
  CHECK_FALSE(f.source);
  const Fault g = parse(R"({"mode":"commit_then_hang","count":-1,"delay_ms":5,"source":"tok_ok"})");
  CHECK(g.count == -1);
  CHECK(g.delay_ms == 5);
  CHECK(g.source == "tok_ok");
}

TEST_CASE("sim faults: bad JSON is refused with a reason") {
  for (const char* bad : {R"({"mode":"explode"})", R"({"count":1})", R"([1])",
                          R"({"mode":"latency","count":0})", R"({"mode":"latency","count":-2})",
                          R"({"mode":"latency","delay_ms":-1})", R"({"mode":"latency","delay_ms":1.5})",
                          R"({"mode":"latency","sorce":"tok_ok"})", R"({"mode":"latency","source":""})"}) {
    std::string error;
    CHECK_MESSAGE(!parse_fault_json(boost::json::parse(bad), error), bad);
    CHECK_MESSAGE(!error.empty(), bad);
  }
}

TEST_CASE("sim faults: flag form") {
  std::string error;
  auto f = parse_fault_spec("commit_then_5xx,count=2,source=tok_pending", error);
  REQUIRE_MESSAGE(f, error);
  CHECK(f->mode == FaultMode::commit_then_5xx);
  CHECK(f->count == 2);
  CHECK(f->source == "tok_pending");
  auto g = parse_fault_spec("delayed_commit,delay_ms=250", error);
  REQUIRE_MESSAGE(g, error);
  CHECK(g->delay_ms == 250);
  CHECK_FALSE(parse_fault_spec("latency,delay=5", error));
  CHECK_FALSE(parse_fault_spec("latency,count=x", error));
  CHECK_FALSE(parse_fault_spec("nope", error));
}

TEST_CASE("sim faults: the queue is FIFO, filtered by source, counted") {
  FaultQueue q;
  q.push(Fault{FaultMode::latency, 1, 10, std::string("tok_pending")});
  q.push(Fault{FaultMode::commit_then_5xx, 2, 0, std::nullopt});
  q.push(Fault{FaultMode::fail_before_commit, -1, 0, std::nullopt});

  auto a = q.take("tok_ok");  // skips the tok_pending-only fault
  REQUIRE(a);
  CHECK(a->mode == FaultMode::commit_then_5xx);
  auto b = q.take("tok_pending");
  REQUIRE(b);
  CHECK(b->mode == FaultMode::latency);
  auto c = q.take("tok_pending");
  REQUIRE(c);
  CHECK(c->mode == FaultMode::commit_then_5xx);  // its second and last use
  for (int i = 0; i < 5; ++i) {
    auto d = q.take("tok_ok");
    REQUIRE(d);
    CHECK(d->mode == FaultMode::fail_before_commit);  // -1: forever
  }
  CHECK(q.size() == 1);
  q.clear();
  CHECK_FALSE(q.take("tok_ok"));
}
