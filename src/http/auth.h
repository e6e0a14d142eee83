#pragma once
// Bearer-token authentication. Tokens are held only as SHA-256 digests and compared in constant
// time against every configured token, so neither timing nor length reveals a near miss.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace payorch::http {

class Authenticator {
public:
  explicit Authenticator(const config::Config& cfg);

  // The tenant id for `Authorization: Bearer <token>`, or nullopt.
  std::optional<std::string> tenant(std::string_view authorization_header) const;
  bool is_admin(std::string_view authorization_header) const;

private:
  using Digest = std::array<unsigned char, 32>;
  static std::optional<Digest> bearer_digest(std::string_view header);
  struct Entry {
    Digest digest;
    std::string tenant_id;
  };
  std::vector<Entry> tenants_;
  Digest admin_{};
};

}  // namespace payorch::http
