#pragma once
// Lower-case hex of bytes: digests, HMACs, request and span ids.
#include <cstddef>
#include <span>
#include <string>

namespace payorch {

inline std::string lower_hex(std::span<const unsigned char> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 0x0f]);
  }
  return out;
}

}  // namespace payorch
