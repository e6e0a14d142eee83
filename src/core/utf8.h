#pragma once
// The one test of whether text payorch is given is UTF-8 (RFC 3629): every door that takes text
// it may store — the settlement import, vendor callbacks, request bodies — refuses what fails
// it, because a stored byte sequence that is not UTF-8 cannot be served back as JSON.
#include <cstddef>
#include <optional>
#include <string_view>

namespace payorch {

// The offset of the first byte that does not begin a well-formed UTF-8 sequence (an overlong
// form, a surrogate, a code point above U+10FFFF, a stray continuation byte or a sequence cut
// short), or nullopt when all of `s` is UTF-8.
std::optional<std::size_t> invalid_utf8_at(std::string_view s);

inline bool valid_utf8(std::string_view s) { return !invalid_utf8_at(s); }

}  // namespace payorch
