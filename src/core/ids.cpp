#include "core/ids.h"

#include <array>
#include <cstdint>
#include <span>

namespace payorch {
namespace {

constexpr char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
constexpr std::size_t id_chars = 26;
constexpr UnixMillis max_ulid_time = (UnixMillis{1} << 48) - 1;

// Crockford base32 of the low 5 × 26 = 130 bits of the big-endian number in `bytes`,
// most significant character first. Bits above the 130th are ignored; missing ones are zero.
std::string encode_130_bits(std::span<const std::uint8_t> bytes) {
  auto bit = [&](std::size_t p) -> unsigned {  // bit p, counted from the least significant
    const std::size_t byte_from_end = p / 8;
    if (byte_from_end >= bytes.size()) return 0;
    return (bytes[bytes.size() - 1 - byte_from_end] >> (p % 8)) & 1u;
  };
  std::string out(id_chars, '0');
  for (std::size_t c = 0; c < id_chars; ++c) {  // c counts characters from the right
    unsigned v = 0;
    for (std::size_t b = 0; b < 5; ++b) v |= bit(c * 5 + b) << b;
    out[id_chars - 1 - c] = crockford[v];
  }
  return out;
}

}  // namespace

// 16 bytes: 6 of time (big-endian, so the first 10 characters are the time and ids sort by
// it), then 10 random. The 2 leading pad bits of the 130 are zero, so the first char is 0-7.
// A time outside [0, 2^48) — a clock before 1970 or past year 10889 — is clamped.
std::string ulid(UnixMillis now, Random& rng) {
  const auto t = static_cast<std::uint64_t>(now < 0 ? 0 : now > max_ulid_time ? max_ulid_time : now);
  std::array<std::uint8_t, 16> raw{};
  for (std::size_t i = 0; i < 6; ++i) raw[i] = static_cast<std::uint8_t>(t >> (8 * (5 - i)));
  rng.fill(std::span<std::uint8_t>(raw).subspan(6));
  return encode_130_bits(raw);
}

std::string new_payment_id(UnixMillis now, Random& rng) { return "pay_" + ulid(now, rng); }

std::string new_refund_id(UnixMillis now, Random& rng) { return std::string(refund_id_prefix) + ulid(now, rng); }

std::string new_client_key(Random& rng) {
  // 17 bytes = 136 bits; the low 130 fill the 26 characters. No time component: the vendor
  // sees this key, and it must reveal nothing and be unguessable.
  std::array<std::uint8_t, 17> raw{};
  rng.fill(raw);
  return "ck_" + encode_130_bits(raw);
}

std::string new_event_id(UnixMillis now, Random& rng) { return "evt_" + ulid(now, rng); }

std::string new_case_id(UnixMillis now, Random& rng) { return "rc_" + ulid(now, rng); }

}  // namespace payorch
