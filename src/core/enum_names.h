#pragma once
// One name table per enum: the only place an enum value and its wire or log name meet. Both
// directions read the same table, so a name cannot be printed that would not parse back.
//
//   constexpr EnumNames<Color, 2> color_names{{{Color::red, "red"}, {Color::blue, "blue"}}};
//   std::string_view to_string(Color c) { return name_of(color_names, c); }
//   std::optional<Color> parse_color(std::string_view s) { return value_of(color_names, s); }

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace payorch {

template <class E, std::size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

// The name of `e`; "?" for a value the table lacks (a table missing a value is a bug the
// enum's round-trip test catches).
template <class E, std::size_t N>
constexpr std::string_view name_of(const EnumNames<E, N>& table, E e) {
  for (const auto& [v, name] : table)
    if (v == e) return name;
  return "?";
}

template <class E, std::size_t N>
constexpr std::optional<E> value_of(const EnumNames<E, N>& table, std::string_view s) {
  for (const auto& [e, name] : table)
    if (name == s) return e;
  return std::nullopt;
}

}  // namespace payorch
