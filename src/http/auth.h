#pragma once
// Bearer-token authentication. Tokens are held only as SHA-256 digests and compared in constant
// time against every configured token, so neither timing nor length reveals a near miss.
//
// The tokens are the configuration's current secrets (config/secrets.h): with cfg.live set, a
// reload's new tokens are used from the next request on; each request is checked against one
// snapshot.
#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/secrets.h"

namespace payorch::http {

class Authenticator {
public:
  explicit Authenticator(const config::Config& cfg);

  // The tenant id for `Authorization: Bearer <token>`, or nullopt.
  std::optional<std::string> tenant(std::string_view authorization_header) const;
  // The name of the admin operator whose token the header carries ("admin" for admin.token,
  // else an admin.operators[] name), or nullopt.
  std::optional<std::string> admin_operator(std::string_view authorization_header) const;
  bool is_admin(std::string_view authorization_header) const {
    return admin_operator(authorization_header).has_value();
  }

private:
  using Digest = std::array<unsigned char, 32>;
  static std::optional<Digest> bearer_digest(std::string_view header);
  struct Entry {
    Digest digest;
    std::string name;  // tenant id or operator name
  };
  struct Table {
    std::vector<Entry> tenants;
    std::vector<Entry> operators;
  };
  static std::shared_ptr<const Table> table_of(const config::Secrets& secrets);
  static const Entry* match(const std::vector<Entry>& entries, const Digest& d);
  // The table for the current secrets, rebuilt when a reload published new ones.
  std::shared_ptr<const Table> table() const;

  std::shared_ptr<config::LiveSecrets> live_;  // null: fixed_ only
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const config::Secrets> source_;  // what fixed_ was built from
  mutable std::shared_ptr<const Table> fixed_;
};

}  // namespace payorch::http
