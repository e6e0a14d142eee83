#pragma once
// Property checks for the fuzz targets. A failed check prints what was expected and aborts, which
// libFuzzer reports as a crash (and saves the input) and payorch_fuzz_replay reports with the
// file that caused it.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

namespace payorch::fuzz {

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line, std::string_view note) {
  std::fprintf(stderr, "%s:%d: property violated: %s\n", file, line, expr);
  if (!note.empty()) std::fprintf(stderr, "  %.*s\n", static_cast<int>(note.size()), note.data());
  std::fflush(stderr);
  std::abort();
}

// Splits `in` at the first `sep`: {before, after}; {in, ""} and found = false when absent.
inline std::pair<std::string_view, std::string_view> split_once(std::string_view in, std::string_view sep,
                                                                 bool* found = nullptr) {
  const std::size_t at = in.find(sep);
  if (found) *found = at != std::string_view::npos;
  if (at == std::string_view::npos) return {in, {}};
  return {in.substr(0, at), in.substr(at + sep.size())};
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace payorch::fuzz

// FUZZ_CHECK(cond) / FUZZ_CHECK_MSG(cond, note): `note` is a std::string_view-convertible value.
#define FUZZ_CHECK(cond) \
  ((cond) ? (void)0 : ::payorch::fuzz::check_failed(#cond, __FILE__, __LINE__, {}))
#define FUZZ_CHECK_MSG(cond, note) \
  ((cond) ? (void)0 : ::payorch::fuzz::check_failed(#cond, __FILE__, __LINE__, (note)))
