#include "config/config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <sstream>

#include <yaml-cpp/emitter.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/node/convert.h>
#include <yaml-cpp/node/emit.h>
#include <yaml-cpp/parser.h>

#include "config/reader.h"
#include "config/sections.h"
#include "core/names.h"

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
                                 "idle_timeout", "max_connections", "reserved_connections",
                                 "max_connections_per_client", "tls"},
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
  s.integer("max_connections_per_client", out.max_connections_per_client, 1, 1'000'000);
  // Left out, the reserve shrinks to fit under a small max_connections; given, it must fit.
  if (s.find("reserved_connections") == nullptr)
    out.reserved_connections = std::min(out.reserved_connections, out.max_connections - 1);
  else if (s.integer("reserved_connections", out.reserved_connections, 0, 1'000'000) &&
           out.reserved_connections >= out.max_connections)
    s.reader().error(s.mark_of("reserved_connections"), s.path_of("reserved_connections"),
                     "must be less than server.max_connections (" +
                         std::to_string(out.max_connections) + "), got " +
                         std::to_string(out.reserved_connections));
  detail::read_tls(s, out.tls);
}

// Reports each of `keys` that `s` has: they belong to the other driver.
void refuse_keys(const Section& s, std::initializer_list<std::string_view> keys,
                 std::string_view why) {
  for (std::string_view key : keys)
    if (s.find(key) != nullptr) s.reader().error(s.mark_of(key), s.path_of(key), why);
}

void read_sqlite(const Section& s, Database& out) {
  refuse_keys(s, {"url", "url_file", "pool_size", "write_connections"},
              "applies to driver postgres only (database.driver is sqlite)");
  s.text("path", out.path, false);
  s.integer("busy_retries", out.busy_retries, 0, 1'000);
  s.duration("busy_timeout", out.busy_timeout);
  s.integer("max_batch", out.max_batch, 1, 100'000);
}

// The URI holds the password: no message here quotes it.
void read_postgres(const Section& s, Database& out) {
  refuse_keys(s, {"path", "busy_retries", "busy_timeout"},
              "applies to driver sqlite only (database.driver is postgres)");
  if (std::optional<Secret> url = s.secret("url", true)) {
    if (url->value.starts_with("postgresql://") || url->value.starts_with("postgres://")) {
      out.url = std::move(url->value);
      if (url->field == s.find("url_file")) out.url_file = url->field->value.Scalar();
    } else {
      s.reader().error(url->field->mark(), url->field->path,
                       "expected a libpq connection URI, "
                       "postgresql://USER:PASSWORD@HOST:PORT/DATABASE (the value is not shown: "
                       "it may hold a password)");
    }
  }
  s.integer("pool_size", out.pool_size, 1, static_cast<std::int64_t>(max_pool_size));
  // Each job of a batch is a subtransaction: PostgreSQL caches 64 of them per session.
  out.max_batch = max_postgres_batch;
  s.integer("max_batch", out.max_batch, 1, static_cast<std::int64_t>(max_postgres_batch));
  s.integer("write_connections", out.write_connections, 1, static_cast<std::int64_t>(out.pool_size));
}

void read_database(const Section& top, Database& out) {
  const Section s = top.section("database",
                                {"driver", "path", "busy_retries", "busy_timeout", "max_batch",
                                 "url", "url_file", "pool_size", "write_connections"},
                                false);
  if (!s.text("driver", out.driver, false)) return;
  if (out.driver == "postgres") return read_postgres(s, out);
  if (out.driver == "sqlite") return read_sqlite(s, out);
  s.reader().error(s.mark_of("driver"), s.path_of("driver"),
                   "unsupported driver \"" + out.driver + "\"; expected sqlite or postgres");
}

// Where providers[i].callback.retry_horizon was written for the provider called `name`, with
// its text; nullopt when that provider left it to its default.
struct Written {
  YAML::Mark mark;
  std::string path;
  std::string text;
};
std::optional<Written> written_retry_horizon(const Section& top, const std::string& name) {
  const detail::Field* list = top.find("providers");
  if (list == nullptr || !list->value.IsSequence()) return std::nullopt;
  for (std::size_t i = 0; i < list->value.size(); ++i) {
    const YAML::Node item = list->value[i];
    if (!item.IsMap()) continue;
    const YAML::Node item_name = item["name"];
    if (!item_name.IsDefined() || !item_name.IsScalar() || item_name.Scalar() != name) continue;
    const YAML::Node callback = item["callback"];
    if (!callback.IsDefined() || !callback.IsMap()) return std::nullopt;
    const YAML::Node horizon = callback["retry_horizon"];
    if (!horizon.IsDefined() || !horizon.IsScalar()) return std::nullopt;
    return Written{horizon.Mark(),
                   list->path + "[" + std::to_string(i) + "].callback.retry_horizon",
                   horizon.Scalar()};
  }
  return std::nullopt;
}

// Reads retention{} after providers[]: the inbox is what recognises a repeated vendor callback
// (docs/contract.md §6), so it must keep each row for as long as any vendor may still retry it
// (callback.retry_horizon). A purged row would let a late duplicate through as a new callback.
void read_retention(const Section& top, const Config& cfg, Retention& out) {
  const Section s = top.section("retention", {"callback_inbox", "delivered_events"}, false);
  const bool inbox_ok = s.duration("callback_inbox", out.callback_inbox) && s.ok();
  s.duration("delivered_events", out.delivered_events);
  if (!inbox_ok) return;

  const Provider* longest = nullptr;
  std::optional<Written> written;
  for (const Provider& p : cfg.providers) {
    std::optional<Written> w = written_retry_horizon(top, p.name);
    // A retry_horizon given but unreadable is reported already; its default is not the point.
    if (w && parse_duration(w->text) != p.callback.retry_horizon) continue;
    if (longest == nullptr || p.callback.retry_horizon > longest->callback.retry_horizon) {
      longest = &p;
      written = std::move(w);
    }
  }
  if (longest == nullptr || out.callback_inbox >= longest->callback.retry_horizon) return;
  const std::string inbox = format_duration(out.callback_inbox);
  const std::string horizon = format_duration(longest->callback.retry_horizon);
  const std::string why =
      ": a callback the vendor repeats after its inbox row was purged would be taken for a new "
      "one; keep retention.callback_inbox at least as long as the longest retry_horizon";
  if (s.find("callback_inbox") != nullptr || !written) {
    s.reader().error(s.mark_of("callback_inbox"), s.path_of("callback_inbox"),
                     inbox + " is shorter than provider " + longest->name +
                         "'s callback.retry_horizon (" + horizon + ")" + why);
  } else {
    s.reader().error(written->mark, written->path,
                     horizon + " (provider " + longest->name +
                         ") is longer than retention.callback_inbox (" + inbox +
                         ", the default)" + why);
  }
}

// log{}: level is debug, info, warn or error; access is true or false.
void read_log(const Section& top, Log& out) {
  const Section s = top.section("log", {"level", "access"}, false);
  std::string level;
  if (s.text("level", level, false) && s.find("level") != nullptr) {
    const std::optional<log::Level> parsed = log::parse_level(level);
    if (!parsed || *parsed == log::Level::alert)
      s.reader().error(s.mark_of("level"), s.path_of("level"),
                       "expected debug, info, warn or error, got \"" + level + "\"");
    else
      out.level = *parsed;
  }
  std::string access;
  if (s.text("access", access, false) && s.find("access") != nullptr) {
    if (access == "true")
      out.access = true;
    else if (access == "false")
      out.access = false;
    else
      s.reader().error(s.mark_of("access"), s.path_of("access"),
                       "expected true or false, got \"" + access + "\"");
  }
}

// Returns engine.lease when it is usable for the providers' safety checks.
std::optional<Millis> read_engine(const Section& top, Engine& out) {
  const Section s = top.section("engine", {"node_id", "workers", "lease", "poll_interval", "breaker"}, false);
  if (s.text("node_id", out.node_id, false) && s.find("node_id") && !is_name(out.node_id))
    s.reader().error(s.mark_of("node_id"), s.path_of("node_id"),
                     "node ids are 1-64 characters of [a-z0-9_-], got \"" + out.node_id + "\"");
  s.integer("workers", out.workers, 1, 4'096);
  s.duration("poll_interval", out.poll_interval);
  const Section b = s.section("breaker", {"failures", "probe_interval"}, false);
  b.integer("failures", out.breaker.failures_to_open, 1, 1'000);
  b.duration("probe_interval", out.breaker.probe_interval);
  if (!s.duration("lease", out.lease) || !s.ok()) return std::nullopt;
  return out.lease;
}

// Bearer tokens: long enough, header-safe, and each identifying exactly one caller.
class Tokens {
public:
  std::optional<std::string> read(const Section& s, std::string owner, bool required = true) {
    std::optional<Secret> t = s.secret("token", required);
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
                    "; the admin, every operator and every tenant need their own token");
        return std::nullopt;
      }
    seen_.emplace_back(t->value, std::move(owner));
    return std::move(t->value);
  }

private:
  std::vector<std::pair<std::string, std::string>> seen_;  // token, who holds it
};

// [A-Za-z0-9._@-]{1,64}: an operator's name, as resolutions record it ("alice@example.com").
bool is_operator_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '@' || c == '-'))
      return false;
  return true;
}

// admin.token (the operator "admin") and admin.operators[]: at least one of them.
void read_admin(const Section& top, Config& cfg, Tokens& tokens) {
  const Section s = top.section("admin", {"token", "token_file", "operators"}, true);
  const bool has_operators = s.find("operators") != nullptr;
  if (std::optional<std::string> t = tokens.read(s, "admin", !has_operators))
    cfg.admin_token = std::move(*t);
  if (!has_operators) return;
  std::map<std::string, std::string, std::less<>> names;
  if (s.find("token") != nullptr || s.find("token_file") != nullptr)
    names.emplace(std::string(legacy_admin_operator), s.path_of("token"));
  for (const Section& o : s.list("operators", {"name", "token", "token_file"}, "operator")) {
    Operator op;
    if (o.text("name", op.name, true)) {
      if (!is_operator_name(op.name))
        o.reader().error(o.mark_of("name"), o.path_of("name"),
                         "operator names are 1-64 characters of [A-Za-z0-9._@-], got \"" +
                             op.name + "\"");
      else
        o.unique("name", "operator name", op.name, names);
    }
    const std::string owner = o.path() + (op.name.empty() ? "" : " (" + op.name + ")");
    if (std::optional<std::string> token = tokens.read(o, owner)) op.token = std::move(*token);
    cfg.operators.push_back(std::move(op));
  }
}

// An absolute http(s) URL the push client can use: a host, an optional numeric port, no user
// info (the secret signs the body instead) and no fragment.
bool is_webhook_url(std::string_view url) {
  if (!detail::is_http_url(url) || url.find('#') != std::string_view::npos) return false;
  std::string_view authority = url.substr(url.find("//") + 2);
  authority = authority.substr(0, authority.find_first_of("/?"));
  if (authority.find('@') != std::string_view::npos) return false;
  std::string_view host = authority;
  std::string_view port;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return false;
    if (!after.empty()) port = after.substr(1);
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) return false;
  }
  if (host.empty()) return false;
  if (port.empty()) return true;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  return ec == std::errc() && end == port.data() + port.size() && value >= 1 && value <= 65535;
}

void read_webhook(const Section& t, std::optional<Webhook>& out) {
  const Section s = t.section("webhook",
                              {"url", "secret", "secret_file", "timeout", "initial_backoff",
                               "max_backoff"},
                              false);
  if (!s.present()) return;
  Webhook w;
  if (s.text("url", w.url, true) && !is_webhook_url(w.url))
    s.reader().error(s.mark_of("url"), s.path_of("url"),
                     "expected an http:// or https:// URL with a host (and no user info or "
                     "fragment), got \"" + w.url + "\"");
  if (std::optional<Secret> secret = s.secret("secret", true)) w.secret = std::move(secret->value);
  s.duration("timeout", w.timeout);
  const bool initial_ok = s.duration("initial_backoff", w.initial_backoff);
  const bool max_ok = s.duration("max_backoff", w.max_backoff);
  if (initial_ok && max_ok && w.initial_backoff > w.max_backoff)
    s.reader().error(s.mark_of("initial_backoff"), s.path_of("initial_backoff"),
                     "initial_backoff (" + format_duration(w.initial_backoff) +
                         ") must not exceed max_backoff (" +
                         format_duration(w.max_backoff) + ")");
  out = std::move(w);
}

void read_tenants(const Section& top, Config& cfg, Tokens& tokens) {
  std::map<std::string, std::string, std::less<>> ids;
  for (const Section& t : top.list("tenants", {"id", "token", "token_file", "webhook"}, "tenant")) {
    Tenant tenant;
    if (t.text("id", tenant.id, true)) {
      if (!is_name(tenant.id))
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

// Where the second YAML document of `yaml` starts (its first node), or nullopt when there is
// only one. Not YAML::LoadAll: in yaml-cpp 0.7 it never returns on some malformed streams (a
// stray "," at the top level makes the parser report an empty document forever and LoadAll
// collects them until memory runs out; jbeder/yaml-cpp#1040). Asking the parser for at most two
// documents always ends.
std::optional<YAML::Mark> second_document_at(const std::string& yaml) {
  class FirstNode : public YAML::EventHandler {
  public:
    std::optional<YAML::Mark> mark;
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& at, YAML::anchor_t) override { seen(at); }
    void OnAlias(const YAML::Mark& at, YAML::anchor_t) override { seen(at); }
    void OnScalar(const YAML::Mark& at, const std::string&, YAML::anchor_t, const std::string&) override {
      seen(at);
    }
    void OnSequenceStart(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
      seen(at);
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark& at, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {
      seen(at);
    }
    void OnMapEnd() override {}

  private:
    void seen(const YAML::Mark& at) {
      if (!mark) mark = at;
    }
  };
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  FirstNode first, second;
  if (!parser.HandleNextDocument(first) || !parser.HandleNextDocument(second)) return std::nullopt;
  return second.mark.value_or(YAML::Mark::null_mark());
}

// The keys that hold a secret or name a file holding one: what a reload may change without a
// restart (besides the whole admin section). The wechatpay and alipay keys go with the serials
// of their certificates (config/secrets.h, AdapterKeys).
bool is_secret_key(std::string_view key) {
  for (std::string_view k : {"token", "secret", "api_key", "cert", "key", "private_key", "platform_public_key",
                             "alipay_public_key", "api_v3_key", "serial_no", "platform_serial"})
    if (key == k || (key.size() == k.size() + 5 && key.starts_with(k) && key.ends_with("_file")))
      return true;
  return false;
}

YAML::Node without_secrets(const YAML::Node& node) {
  if (node.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (auto it = node.begin(); it != node.end(); ++it)
      if (!(it->first.IsScalar() && is_secret_key(it->first.Scalar())))
        out[YAML::Clone(it->first)] = without_secrets(it->second);
    return out;
  }
  if (node.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (auto it = node.begin(); it != node.end(); ++it) out.push_back(without_secrets(*it));
    return out;
  }
  return YAML::Clone(node);
}

std::map<std::string, std::string, std::less<>> restart_sections(const YAML::Node& root) {
  std::map<std::string, std::string, std::less<>> out;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar() == "admin") continue;
    YAML::Emitter text;
    text << without_secrets(it->second);
    out[it->first.Scalar()] = text.c_str();
  }
  return out;
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

  YAML::Node root;
  std::optional<YAML::Mark> second_document;
  try {
    root = YAML::Load(yaml);
    second_document = second_document_at(yaml);
  } catch (const YAML::Exception& e) {
    reader.error(e.mark, "YAML syntax error", e.msg);
    throw ConfigError(reader.report());
  }
  if (root.IsNull()) {
    reader.error(YAML::Mark::null_mark(), "(top level)", "the file has no settings");
    throw ConfigError(reader.report());
  }
  if (second_document)
    reader.error(*second_document, "(top level)", "only one YAML document is allowed");
  if (!root.IsMap()) {
    reader.error(root.Mark(), "(top level)", "expected a mapping of sections (server, ...)");
    throw ConfigError(reader.report());
  }

  const Section top(reader, root, root.Mark(), "",
                    {"server", "database", "retention", "engine", "admin", "tenants",
                     "providers", "routing", "log"});
  Config cfg;
  cfg.source_path = name;
  read_server(top, cfg.server);
  read_database(top, cfg.database);
  const std::optional<Millis> lease = read_engine(top, cfg.engine);
  Tokens tokens;
  read_admin(top, cfg, tokens);
  read_tenants(top, cfg, tokens);
  detail::read_providers(top, cfg.providers, lease);
  read_retention(top, cfg, cfg.retention);
  read_routing(top, cfg);
  read_log(top, cfg.log);
  if (reader.failed()) throw ConfigError(reader.report());
  cfg.restart_sections = restart_sections(root);
  return cfg;
}

Config load(const std::string& path) {
  std::string os_error;
  std::optional<std::string> text = detail::read_whole_file(path, os_error);
  if (!text) throw ConfigError(path + ": cannot read the configuration: " + os_error);
  return load_from_string(*text, path);
}

}  // namespace payorch::config
