#include "core/ids.h"

#include <doctest/doctest.h>

#include <set>
#include <string_view>

namespace payorch {
namespace {

constexpr std::string_view crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

bool all_crockford(std::string_view s) {
  return s.find_first_not_of(crockford) == std::string_view::npos;
}

// Draws from a fixed byte pattern, to pin the bit layout.
class FixedRandom final : public Random {
public:
  explicit FixedRandom(std::uint8_t byte) : byte_(byte) {}
  void fill(std::span<std::uint8_t> out) override {
    for (auto& b : out) b = byte_;
  }

private:
  std::uint8_t byte_;
};

TEST_CASE("ulid: 26 Crockford base32 characters") {
  SeededRandom rng(1);
  for (UnixMillis t : {UnixMillis{0}, UnixMillis{1'700'000'000'000}, (UnixMillis{1} << 48) - 1}) {
    const std::string id = ulid(t, rng);
    CHECK(id.size() == 26);
    CHECK(all_crockford(id));
    CHECK(id[0] <= '7');  // 130 bits hold 128: the top two are zero
  }
}

TEST_CASE("ulid: bit layout — 48-bit big-endian time, then 80 random bits") {
  FixedRandom zeros(0x00), ones(0xFF);
  CHECK(ulid(0, zeros) == "00000000000000000000000000");
  CHECK(ulid((UnixMillis{1} << 48) - 1, ones) == "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
  CHECK(ulid(1, zeros) == "00000000010000000000000000");
  CHECK(ulid(0, ones) == "0000000000ZZZZZZZZZZZZZZZZ");
  // Known value from the ULID spec's example time, 1469918176385 ms → "01ARYZ6S41".
  CHECK(ulid(1469918176385, zeros).substr(0, 10) == "01ARYZ6S41");
}

TEST_CASE("ulid: a later millisecond sorts after, whatever the randomness") {
  SeededRandom rng(7);
  FixedRandom ones(0xFF), zeros(0x00);
  CHECK(ulid(1'700'000'000'000, ones) < ulid(1'700'000'000'001, zeros));
  std::string previous = ulid(1'600'000'000'000, rng);
  for (UnixMillis t = 1'600'000'000'001; t < 1'600'000'001'000; t += 37) {
    const std::string next = ulid(t, rng);
    CHECK(previous < next);
    previous = next;
  }
}

TEST_CASE("ulid: out-of-range times are clamped, not wrapped") {
  FixedRandom zeros(0x00);
  CHECK(ulid(-5, zeros) == ulid(0, zeros));
  CHECK(ulid(UnixMillis{1} << 50, zeros) == ulid((UnixMillis{1} << 48) - 1, zeros));
}

TEST_CASE("ids: prefixes and seeded determinism") {
  SeededRandom a(42), b(42), c(43);
  const UnixMillis now = 1'700'000'000'000;
  const std::string pay = new_payment_id(now, a);
  CHECK(pay == new_payment_id(now, b));
  CHECK(pay != new_payment_id(now, c));
  CHECK(pay.rfind("pay_", 0) == 0);
  CHECK(pay.size() == 4 + 26);
  CHECK(all_crockford(std::string_view(pay).substr(4)));

  const std::string evt = new_event_id(now, a);
  CHECK(evt.rfind("evt_", 0) == 0);
  CHECK(evt.size() == 4 + 26);
  CHECK(evt == new_event_id(now, b));

  const std::string rc = new_case_id(now, a);
  CHECK(rc.rfind("rc_", 0) == 0);
  CHECK(rc.size() == 3 + 26);
  CHECK(rc == new_case_id(now, b));

  const std::string re = new_refund_id(now, a);
  CHECK(re.rfind("re_", 0) == 0);
  CHECK(re.size() == 3 + 26);
  CHECK(all_crockford(std::string_view(re).substr(3)));
  CHECK(re == new_refund_id(now, b));
  CHECK(std::string_view(re).substr(3, 10) == std::string_view(pay).substr(4, 10));  // same time prefix
}

TEST_CASE("client_key: ck_ + 26 base32 chars of randomness, all 130 bits used") {
  SeededRandom a(5), b(5);
  const std::string ck = new_client_key(a);
  CHECK(ck == new_client_key(b));
  CHECK(ck.rfind("ck_", 0) == 0);
  CHECK(ck.size() == 3 + 26);
  CHECK(all_crockford(std::string_view(ck).substr(3)));

  FixedRandom ones(0xFF), zeros(0x00);
  CHECK(new_client_key(ones) == "ck_ZZZZZZZZZZZZZZZZZZZZZZZZZZ");  // first char too: 130 bits, no padding
  CHECK(new_client_key(zeros) == "ck_00000000000000000000000000");

  std::set<std::string> seen;
  bool first_char_above_7 = false;
  for (int i = 0; i < 1000; ++i) {
    const std::string k = new_client_key(a);
    seen.insert(k);
    first_char_above_7 = first_char_above_7 || k[3] > '7';
  }
  CHECK(seen.size() == 1000);
  CHECK(first_char_above_7);
}

}  // namespace
}  // namespace payorch
