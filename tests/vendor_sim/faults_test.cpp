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
  for (std::string_view bad : {R"({"mode":"explode"})", R"({"count":1})", R"([1])",
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
  q.push(Fault{FaultMode::latency, 1, 10, std::string("tok_pending"), std::nullopt});
  q.push(Fault{FaultMode::commit_then_5xx, 2, 0, std::nullopt, std::nullopt});
  q.push(Fault{FaultMode::fail_before_commit, -1, 0, std::nullopt, std::nullopt});

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

TEST_CASE("sim faults: an operation filter; a refund skips source-filtered faults") {
  const Fault f = parse(R"({"mode":"commit_then_5xx","operation":"refund"})");
  CHECK(f.operation == Operation::refund);
  CHECK(to_json(f).at("operation").as_string() == "refund");
  CHECK_FALSE(parse(R"({"mode":"latency","operation":null})").operation);
  std::string error;
  CHECK_FALSE(parse_fault_json(boost::json::parse(R"({"mode":"latency","operation":"capture"})"), error));
  CHECK_FALSE(parse_fault_spec("latency,operation=capture", error));
  const auto g = parse_fault_spec("latency,operation=charge", error);
  REQUIRE_MESSAGE(g, error);
  CHECK(g->operation == Operation::charge);

  FaultQueue q;
  q.push(Fault{FaultMode::latency, 1, 10, std::string("tok_ok"), std::nullopt});
  q.push(Fault{FaultMode::commit_then_hang, 1, 10, std::nullopt, Operation::charge});
  q.push(Fault{FaultMode::delayed_commit, 1, 10, std::nullopt, Operation::refund});
  q.push(Fault{FaultMode::fail_before_commit, 1, 0, std::nullopt, std::nullopt});
  auto a = q.take(std::nullopt, Operation::refund);
  REQUIRE(a);
  CHECK(a->mode == FaultMode::delayed_commit);
  auto b = q.take(std::nullopt, Operation::refund);
  REQUIRE(b);
  CHECK(b->mode == FaultMode::fail_before_commit);  // unfiltered: either operation
  CHECK_FALSE(q.take(std::nullopt, Operation::refund));
  CHECK(q.take("tok_ok", Operation::charge)->mode == FaultMode::latency);
  CHECK(q.take("tok_ok", Operation::charge)->mode == FaultMode::commit_then_hang);
  CHECK(q.size() == 0);
}
