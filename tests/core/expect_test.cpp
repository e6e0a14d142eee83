#include "core/expect.h"

#include <doctest/doctest.h>

#include <string>

namespace payorch {
namespace {

TEST_CASE("expect: returns the value an optional holds") {
  std::optional<int> v = 7;
  CHECK(expect(v, "seven") == 7);
  expect(v, "seven") = 8;
  CHECK(*v == 8);
}

TEST_CASE("expect: an empty optional throws a logic_error naming the belief and the line") {
  const std::optional<std::string> none;
  try {
    (void)expect(none, "the payment to exist");
    FAIL("expect returned from an empty optional");
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    CHECK(what.find("expected the payment to exist") != std::string::npos);
    CHECK(what.find("expect_test.cpp:") != std::string::npos);
  }
}

}  // namespace
}  // namespace payorch
