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

TEST_CASE("admin tokens name their operator: admin.token is \"admin\", operators their own names") {
  config::Config cfg;
  cfg.admin_token = "admin-token-123";
  cfg.operators.push_back({"alice@ops", "alice-token-123"});
  cfg.operators.push_back({"bob", "bob-token-12345"});
  cfg.tenants.push_back({"acme", "acme-token-123", std::nullopt});
  http::Authenticator auth(cfg);

  CHECK(auth.admin_operator("Bearer admin-token-123") == "admin");
  CHECK(auth.admin_operator("Bearer alice-token-123") == "alice@ops");
  CHECK(auth.admin_operator("Bearer bob-token-12345") == "bob");
  CHECK_FALSE(auth.admin_operator("Bearer bob-token-1234").has_value());
  CHECK_FALSE(auth.admin_operator("Bearer acme-token-123").has_value());  // a tenant is no operator
  CHECK_FALSE(auth.tenant("Bearer alice-token-123").has_value());         // nor an operator a tenant

  // Only operators: no token is "admin".
  config::Config named;
  named.operators.push_back({"carol", "carol-token-123"});
  http::Authenticator only_named(named);
  CHECK(only_named.admin_operator("Bearer carol-token-123") == "carol");
  CHECK_FALSE(only_named.is_admin("Bearer "));
}

TEST_CASE("with live secrets, the next request after a publish uses the new tokens") {
  config::Config cfg;
  cfg.admin_token = "admin-token-123";
  cfg.tenants.push_back({"acme", "acme-token-old", std::nullopt});
  config::make_live(cfg);
  http::Authenticator auth(cfg);
  CHECK(auth.tenant("Bearer acme-token-old") == "acme");

  config::Secrets next = *cfg.live->get();
  next.tenant_tokens = {{"acme", "acme-token-new"}};
  next.operators = {{"dave", "dave-token-123"}};
  cfg.live->publish(next);
  CHECK_FALSE(auth.tenant("Bearer acme-token-old").has_value());
  CHECK(auth.tenant("Bearer acme-token-new") == "acme");
  CHECK_FALSE(auth.is_admin("Bearer admin-token-123"));
  CHECK(auth.admin_operator("Bearer dave-token-123") == "dave");
}
