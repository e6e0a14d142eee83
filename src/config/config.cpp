#include "config/config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "config/reader.h"
#include "config/sections.h"

namespace payorch::config {
namespace {

using detail::Reader;
using detail::Secret;
using detail::Section;

constexpr std::int64_t max_bytes = std::int64_t{1} << 30;

// "127.0.0.1:8080" or "[::1]:8080"; port 0 means "any free port".
bool parse_listen(std::string_view s, std::string& host, std::uint16_t& port) {
  std::string_view h;
  std::string_view p;
  int family = AF_INET;
  if (s.starts_with('[')) {
    const std::size_t close = s.find("]:");
    if (close == std::string_view::npos) return false;
    h = s.substr(1, close - 1);
    p = s.substr(close + 2);
    family = AF_INET6;
  } else {
    const std::size_t colon = s.find(':');
    if (colon == std::string_view::npos || s.find(':', colon + 1) != std::string_view::npos)
      return false;
    h = s.substr(0, colon);
    p = s.substr(colon + 1);
  }
  unsigned char addr[16];
  const std::string host_z(h);
  if (inet_pton(family, host_z.c_str(), addr) != 1) return false;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || p.size() > 5 || ec != std::errc() || end != p.data() + p.size() || value > 65535)
    return false;
  host = host_z;
  port = static_cast<std::uint16_t>(value);
  return true;
}

void read_server(const Section& top, Server& out) {
  const Section s = top.section("server",
                                {"listen", "max_body_bytes", "max_header_bytes", "read_timeout",
                                 "idle_timeout", "max_connections", "tls"},
                                true);
  std::string listen;
  if (s.text("listen", listen, true) && !parse_listen(listen, out.listen_host, out.listen_port))
    s.reader().error(s.mark_of("listen"), s.path_of("listen"),
                     "expected HOST:PORT with an IPv4 address (127.0.0.1:8080) or [IPv6]:PORT "
                     "([::1]:8080), got \"" + listen + "\"");
  s.integer("max_body_bytes", out.max_body_bytes, 1, max_bytes);
  s.integer("max_header_bytes", out.max_header_bytes, 1, max_bytes);
  s.duration("read_timeout", out.read_timeout);
  s.duration("idle_timeout", out.idle_timeout);
  s.integer("max_connections", out.max_connections, 1, 1'000'000);
  if (const detail::Field* tls = s.find("tls"))
    s.reader().error(tls->key.Mark(), tls->path,
                     "TLS termination is not supported yet; terminate TLS in front of payorchd");
}

void read_database(const Section& top, Database& out) {
  const Section s = top.section(
      "database", {"driver", "path", "busy_retries", "busy_timeout", "max_batch"}, false);
  if (s.text("driver", out.driver, false) && out.driver != "sqlite")
    s.reader().error(s.mark_of("driver"), s.path_of("driver"),
                     "unsupported driver \"" + out.driver + "\"; only sqlite is supported");
  s.text("path", out.path, false);
  s.integer("busy_retries", out.busy_retries, 0, 1'000);
  s.duration("busy_timeout", out.busy_timeout);
  s.integer("max_batch", out.max_batch, 1, 100'000);
}

void read_retention(const Section& top, Retention& out) {
  const Section s = top.section("retention", {"callback_inbox", "delivered_events"}, false);
  s.duration("callback_inbox", out.callback_inbox);
  s.duration("delivered_events", out.delivered_events);
}

// Returns engine.lease when it is usable for the providers' safety checks.
std::optional<Millis> read_engine(const Section& top, Engine& out) {
  const Section s = top.section("engine", {"workers", "lease", "poll_interval"}, false);
  s.integer("workers", out.workers, 1, 1'024);
  s.duration("poll_interval", out.poll_interval);
  if (!s.duration("lease", out.lease) || !s.ok()) return std::nullopt;
  return out.lease;
}

// Bearer tokens: long enough, header-safe, and each identifying exactly one caller.
class Tokens {
public:
  std::optional<std::string> read(const Section& s, std::string owner) {
    std::optional<Secret> t = s.secret("token", true);
    if (!t) return std::nullopt;
    Reader& r = s.reader();
    const YAML::Mark at = t->field->mark();
    // Messages never include the token itself.
    if (t->value.size() < 8) {
      r.error(at, t->field->path, "too short: a token needs at least 8 characters");
      return std::nullopt;
    }
    if (!detail::is_visible_ascii(t->value)) {
      r.error(at, t->field->path, "must be printable ASCII without spaces (it is a bearer token)");
      return std::nullopt;
    }
    for (const auto& [token, holder] : seen_)
      if (token == t->value) {
        r.error(at, t->field->path,
                "the same token is already used by " + holder +
                    "; the admin and every tenant need their own token");
        return std::nullopt;
      }
    seen_.emplace_back(t->value, std::move(owner));
    return std::move(t->value);
  }

private:
  std::vector<std::pair<std::string, std::string>> seen_;  // token, who holds it
};

void read_admin(const Section& top, Config& cfg, Tokens& tokens) {
  const Section s = top.section("admin", {"token", "token_file"}, true);
  if (std::optional<std::string> t = tokens.read(s, "admin")) cfg.admin_token = std::move(*t);
}

void read_webhook(const Section& t, std::optional<Webhook>& out) {
  const Section s = t.section("webhook", {"url", "secret", "secret_file"}, false);
  if (!s.present()) return;
  Webhook w;
  if (s.text("url", w.url, true) && !detail::is_http_url(w.url))
    s.reader().error(s.mark_of("url"), s.path_of("url"),
                     "expected an http:// or https:// URL, got \"" + w.url + "\"");
  if (std::optional<Secret> secret = s.secret("secret", true)) w.secret = std::move(secret->value);
  out = std::move(w);
}

void read_tenants(const Section& top, Config& cfg, Tokens& tokens) {
  std::map<std::string, std::string, std::less<>> ids;
  for (const Section& t : top.list("tenants", {"id", "token", "token_file", "webhook"}, "tenant")) {
    Tenant tenant;
    if (t.text("id", tenant.id, true)) {
      if (!detail::is_name(tenant.id))
        t.reader().error(t.mark_of("id"), t.path_of("id"),
                         "tenant ids are 1-64 characters of [a-z0-9_-], got \"" + tenant.id + "\"");
      else
        t.unique("id", "tenant id", tenant.id, ids);
    }
    const std::string owner = t.path() + (tenant.id.empty() ? "" : " (" + tenant.id + ")");
    if (std::optional<std::string> token = tokens.read(t, owner)) tenant.token = std::move(*token);
    read_webhook(t, tenant.webhook);
    cfg.tenants.push_back(std::move(tenant));
  }
}

void read_routing(const Section& top, Config& cfg) {
  const Section s = top.section("routing", {"default_provider"}, false);
  if (!s.find("default_provider")) {
    if (cfg.providers.size() == 1) cfg.default_provider = cfg.providers.front().name;
    else if (cfg.providers.size() > 1)
      s.reader().error(s.present() ? s.mark() : top.mark_of("providers"),
                       s.path_of("default_provider"),
                       "missing required key: needed when more than one provider is configured");
    return;
  }
  if (s.text("default_provider", cfg.default_provider, true) &&
      cfg.find_provider(cfg.default_provider) == nullptr) {
    std::string names;
    for (const Provider& p : cfg.providers) names += (names.empty() ? "" : ", ") + p.name;
    s.reader().error(s.mark_of("default_provider"), s.path_of("default_provider"),
                     "no provider is named \"" + cfg.default_provider + "\" (configured: " +
                         names + ")");
  }
}

}  // namespace

const Provider* Config::find_provider(std::string_view name) const {
  for (const Provider& p : providers)
    if (p.name == name) return &p;
  return nullptr;
}

std::optional<Millis> parse_duration(std::string_view text) {
  static constexpr std::pair<std::string_view, std::int64_t> units[] = {
      {"ms", 1}, {"s", 1'000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
  const std::size_t digits = static_cast<std::size_t>(
      std::find_if(text.begin(), text.end(), [](char c) { return c < '0' || c > '9'; }) -
      text.begin());
  if (digits == 0) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  const auto* found = std::find_if(std::begin(units), std::end(units),
                                   [&](const auto& u) { return u.first == unit; });
  if (found == std::end(units)) return std::nullopt;
  std::int64_t n = 0;
  if (std::from_chars(text.data(), text.data() + digits, n).ec != std::errc()) return std::nullopt;
  if (n <= 0 || n > max_duration.count() / found->second) return std::nullopt;
  return Millis{n * found->second};
}

Config load_from_string(const std::string& yaml, const std::string& name) {
  std::filesystem::path base_dir = std::filesystem::path(name).parent_path();
  if (base_dir.empty()) base_dir = ".";
  Reader reader(name, base_dir);

  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml);
  } catch (const YAML::Exception& e) {
    reader.error(e.mark, "YAML syntax error", e.msg);
    throw ConfigError(reader.report());
  }
  if (docs.empty() || docs[0].IsNull()) {
    reader.error(YAML::Mark::null_mark(), "(top level)", "the file has no settings");
    throw ConfigError(reader.report());
  }
  if (docs.size() > 1)
    reader.error(docs[1].Mark(), "(top level)", "only one YAML document is allowed");
  if (!docs[0].IsMap()) {
    reader.error(docs[0].Mark(), "(top level)", "expected a mapping of sections (server, ...)");
    throw ConfigError(reader.report());
  }

  const Section top(reader, docs[0], docs[0].Mark(), "",
                    {"server", "database", "retention", "engine", "admin", "tenants",
                     "providers", "routing"});
  Config cfg;
  cfg.source_path = name;
  read_server(top, cfg.server);
  read_database(top, cfg.database);
  read_retention(top, cfg.retention);
  const std::optional<Millis> lease = read_engine(top, cfg.engine);
  Tokens tokens;
  read_admin(top, cfg, tokens);
  read_tenants(top, cfg, tokens);
  detail::read_providers(top, cfg.providers, lease);
  read_routing(top, cfg);
  if (reader.failed()) throw ConfigError(reader.report());
  return cfg;
}

Config load(const std::string& path) {
  std::string os_error;
  std::optional<std::string> text = detail::read_whole_file(path, os_error);
  if (!text) throw ConfigError(path + ": cannot read the configuration: " + os_error);
  return load_from_string(*text, path);
}

}  // namespace payorch::config
