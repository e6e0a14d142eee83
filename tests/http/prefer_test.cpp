// `Prefer: wait=N` as RFC 7240 writes it: preference names are case-insensitive, a value may be
// a token or a quoted string, `=` may have whitespace around it, preferences are a comma list
// (several Prefer lines are one list), parameters follow a preference after `;`, and only the
// first instance of a preference counts.
#include <doctest/doctest.h>

#include "http/request_fields.h"

using payorch::http::max_wait_s;
using payorch::http::preferred_wait;

TEST_CASE("Prefer: wait in every RFC 7240 spelling") {
  CHECK(preferred_wait("wait=5") == 5);
  CHECK(preferred_wait("wait=\"5\"") == 5);
  CHECK(preferred_wait("Wait=5") == 5);
  CHECK(preferred_wait("WAIT=7") == 7);
  CHECK(preferred_wait("wait = 5") == 5);
  CHECK(preferred_wait("wait\t=\t\"4\"") == 4);
  CHECK(preferred_wait("  wait=5  ") == 5);
  CHECK(preferred_wait("wait=0") == 0);
  CHECK(preferred_wait("wait=05") == 5);

  // With other preferences, before and after, and with parameters.
  CHECK(preferred_wait("respond-async, wait=5") == 5);
  CHECK(preferred_wait("return=minimal; foo, wait=3") == 3);
  CHECK(preferred_wait("wait=3; foo=bar, respond-async") == 3);
  CHECK(preferred_wait("respond-async,wait=6") == 6);
  CHECK(preferred_wait("return=representation,,  , wait=2") == 2);
  // A comma or `wait=` inside a quoted value belongs to that value.
  CHECK(preferred_wait("foo=\"a, wait=9\", wait=2") == 2);
  CHECK(preferred_wait("foo=\"a\\\", wait=9\", wait=1") == 1);
  CHECK(preferred_wait("foo; x=\"wait=9\"") == 0);
  // The first instance counts (RFC 7240 §2), even when a later one is valid.
  CHECK(preferred_wait("wait=5, wait=7") == 5);
  CHECK(preferred_wait("wait=abc, wait=7") == 0);

  // Several Prefer header lines are one comma-separated list.
  CHECK(preferred_wait(std::vector<std::string_view>{"respond-async", "wait=8"}) == 8);
  CHECK(preferred_wait(std::vector<std::string_view>{"Wait=\"2\"", "wait=9"}) == 2);
  CHECK(preferred_wait(std::vector<std::string_view>{}) == 0);

  // Capped; an overflowing number is a long wait, still capped.
  CHECK(preferred_wait("wait=31") == max_wait_s);
  CHECK(preferred_wait("wait=100000") == max_wait_s);
  CHECK(preferred_wait("wait=99999999999999999999999") == max_wait_s);
}

TEST_CASE("Prefer: anything that is not a wait preference means no wait") {
  CHECK(preferred_wait("") == 0);
  CHECK(preferred_wait("respond-async") == 0);
  CHECK(preferred_wait("waiter=5") == 0);
  CHECK(preferred_wait("nowait=5") == 0);
  CHECK(preferred_wait("wait") == 0);
  CHECK(preferred_wait("wait=") == 0);
  CHECK(preferred_wait("wait=\"\"") == 0);
  CHECK(preferred_wait("wait=-1") == 0);
  CHECK(preferred_wait("wait=+5") == 0);
  CHECK(preferred_wait("wait=5s") == 0);
  CHECK(preferred_wait("wait=1.5") == 0);
  CHECK(preferred_wait("wait=\"5") == 0);
  CHECK(preferred_wait("wait=5 5") == 0);
  CHECK(preferred_wait("x; wait=5") == 0);  // a parameter of x, not a preference
}
