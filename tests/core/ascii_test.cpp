// core/ascii.h: the fold is A–Z only, whatever the process locale.
#include <doctest/doctest.h>

#include <clocale>
#include <string>

#include "core/ascii.h"

namespace payorch {

TEST_CASE("ascii_lower folds A-Z and passes every other byte unchanged") {
  CHECK(ascii_lower("Content-Type: Application/JSON") == "content-type: application/json");
  CHECK(ascii_lower("@[`{") == "@[`{");  // the bytes beside A-Z and a-z
  // Latin-1 and UTF-8 bytes stay as they are, even under a locale whose tolower maps them.
  std::setlocale(LC_CTYPE, "C.UTF-8");
  const std::string utf8 = "\xC3\x89t\xC3\xA9 \xC0\xDE";  // "Été" and two Latin-1 capitals
  CHECK(ascii_lower(utf8) == "\xC3\x89t\xC3\xA9 \xC0\xDE");
  std::setlocale(LC_CTYPE, "C");
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string folded = ascii_lower(all);
  for (int c = 0; c < 256; ++c) {
    CAPTURE(c);
    const char want = c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : static_cast<char>(c);
    CHECK(folded[static_cast<std::size_t>(c)] == want);
  }
}

TEST_CASE("ascii_iequals compares with A-Z folded, and sizes first") {
  CHECK(ascii_iequals("Bearer ", "bEARER "));
  CHECK(ascii_iequals("", ""));
  CHECK_FALSE(ascii_iequals("Bearer", "Bearer "));
  CHECK_FALSE(ascii_iequals("wait", "w\xC3\xA1it"));
  CHECK_FALSE(ascii_iequals("\xC3\x89", "\xC3\xA9"));  // É and é: not ASCII, not folded
  static_assert(ascii_iequals("WAIT", "wait"));
}

}  // namespace payorch
