#include <doctest/doctest.h>

#include "http/auth.h"

using namespace payorch;

TEST_CASE("bearer tokens map to their tenant and nothing else") {
  config::Config cfg;
  cfg.admin_token = "admin-token-123";
  cfg.tenants.push_back({"acme", "acme-token-123", std::nullopt});
  cfg.tenants.push_back({"globex", "globex-token-123", std::nullopt});
  http::Authenticator auth(cfg);

  CHECK(auth.tenant("Bearer acme-token-123") == "acme");
  CHECK(auth.tenant("bearer globex-token-123") == "globex");  // the scheme is case-insensitive
  CHECK_FALSE(auth.tenant("Bearer acme-token-12").has_value());
  CHECK_FALSE(auth.tenant("Bearer acme-token-1234").has_value());
  CHECK_FALSE(auth.tenant("Bearer ").has_value());
  CHECK_FALSE(auth.tenant("").has_value());
  CHECK_FALSE(auth.tenant("Basic YWNtZTp4").has_value());
  CHECK_FALSE(auth.tenant("acme-token-123").has_value());
  CHECK_FALSE(auth.tenant("Bearer admin-token-123").has_value());  // admin is not a tenant

  CHECK(auth.is_admin("Bearer admin-token-123"));
  CHECK_FALSE(auth.is_admin("Bearer acme-token-123"));
  CHECK_FALSE(auth.is_admin(""));
}
