#pragma once
// ASCII case, the one home: header names, media types, the `Bearer` scheme, signature hex and
// host names compare or fold A–Z only. Every other byte passes unchanged, whatever the process
// locale, so UTF-8 text is never altered by a fold.
#include <string>
#include <string_view>

namespace payorch {

constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

// Whether `a` and `b` are equal once A–Z are folded.
constexpr bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}

}  // namespace payorch
