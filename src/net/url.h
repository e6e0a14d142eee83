#pragma once
// Splits a vendor URL into what the client needs: where to connect and what to ask for.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace payorch::net {

struct Origin {
  bool tls = false;
  std::string host;         // a DNS name or an IP literal without [brackets]
  std::uint16_t port = 0;   // explicit, or 80 / 443 by scheme
  std::string host_header;  // "host[:port]" as sent in Host (brackets for IPv6)

  // "https://host:port": connections are pooled per origin.
  std::string key() const;
};

struct ParsedUrl {
  Origin origin;
  std::string target;  // "/path?query" ("/" when the path is empty); never a fragment
};

// Accepts only absolute http and https URLs with a host and no user info. On failure returns
// nullopt and sets `error`.
std::optional<ParsedUrl> parse_url(std::string_view url, std::string& error);

}  // namespace payorch::net
