#include "providers/stripe/form.h"

#include <string_view>

namespace payorch::providers::stripe {
namespace {

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

void append_encoded(std::string& out, std::string_view text, bool keep_brackets) {
  static constexpr char hex[] = "0123456789ABCDEF";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (unreserved(c) || (keep_brackets && (c == '[' || c == ']'))) {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0x0f];
    }
  }
}

}  // namespace

std::string form_encode(const FormFields& fields) {
  std::string out;
  for (const auto& [key, value] : fields) {
    if (!out.empty()) out += '&';
    append_encoded(out, key, true);
    out += '=';
    append_encoded(out, value, false);
  }
  return out;
}

}  // namespace payorch::providers::stripe
