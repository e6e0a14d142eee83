#pragma once
// Checks an enum's name table (core/enum_names.h) against the list of all its values the test
// spells out: every value has a name of its own, and where the enum has a parser the name
// reads back as the value. A value the table lacks is named "?" and fails here.
//
//   check_names({Color::red, Color::blue}, parse_color);
//   check_names({Breaker::State::closed, Breaker::State::open});  // no parser
#include <doctest/doctest.h>

#include <cstddef>
#include <initializer_list>
#include <set>
#include <span>
#include <string>

namespace payorch::test {
namespace detail {

// `to_string` is found by argument-dependent lookup, in the enum's own namespace.
template <class E, class... Parse>
void check_names(std::span<const E> all, const Parse&... parse) {
  static_assert(sizeof...(Parse) <= 1, "one parser at most");
  std::set<std::string> seen;
  for (E e : all) {
    const std::string name(to_string(e));
    CAPTURE(name);
    CHECK(name != "?");
    CHECK_MESSAGE(seen.insert(name).second, "another value has the same name");
    if constexpr (sizeof...(Parse) == 1) CHECK(((parse(name) == e) && ...));
  }
}

}  // namespace detail

template <class E, class... Parse>
void check_names(std::initializer_list<E> all, const Parse&... parse) {
  detail::check_names(std::span<const E>(all.begin(), all.size()), parse...);
}

template <class E, std::size_t N, class... Parse>
void check_names(const E (&all)[N], const Parse&... parse) {
  detail::check_names(std::span<const E>(all), parse...);
}

}  // namespace payorch::test
