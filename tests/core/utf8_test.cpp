// core/utf8.h: RFC 3629's well-formed sequences, and the offset of the first byte that is not.
#include <doctest/doctest.h>

#include <string>

#include "core/utf8.h"

using namespace payorch;

TEST_CASE("utf8: well-formed text of every length is valid") {
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("ck_01HZX plain ASCII"));
  CHECK(valid_utf8("caf\xC3\xA9"));                 // U+00E9
  CHECK(valid_utf8("\xE6\x94\xAF\xE4\xBB\x98\xE5\xAE\x9D"));  // 支付宝
  CHECK(valid_utf8("\xF0\x9F\x98\x80"));            // U+1F600
  CHECK(valid_utf8("\xF4\x8F\xBF\xBF"));            // U+10FFFF, the last code point
  CHECK(valid_utf8(std::string("a\0b", 3)));        // NUL is UTF-8 (control characters are judged elsewhere)
}

TEST_CASE("utf8: the first byte that does not begin a well-formed sequence is named") {
  CHECK(invalid_utf8_at("ref\xFF\xFE") == 3);
  CHECK(invalid_utf8_at("\x80") == 0);              // a stray continuation byte
  CHECK(invalid_utf8_at("ab\xC3") == 2);            // cut short
  CHECK(invalid_utf8_at("\xC0\xAF") == 0);          // overlong '/'
  CHECK(invalid_utf8_at("\xE0\x80\xAF") == 0);      // overlong, three bytes
  CHECK(invalid_utf8_at("\xF0\x80\x80\xAF") == 0);  // overlong, four bytes
  CHECK(invalid_utf8_at("x\xED\xA0\x80") == 1);     // a surrogate (U+D800)
  CHECK(invalid_utf8_at("\xF4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK(invalid_utf8_at("\xF5\x80\x80\x80") == 0);
  CHECK(invalid_utf8_at("\xE6\x94") == 0);          // two of three bytes
  CHECK(invalid_utf8_at("\xE6\x94\x41") == 0);
  CHECK(invalid_utf8_at("ok \xC3\xA9 then \xFF") == 11);
}
