#pragma once
// payorchd's configuration (docs/contract.md §7), loaded from YAML and validated as a whole before the
// daemon touches the database or the network. Every error names the file and line.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/decide.h"
#include "core/risk.h"
#include "util/log.h"

namespace payorch::config {

class LiveSecrets;

using Millis = std::chrono::milliseconds;

// Thrown by load(); what() is "FILE:LINE:COL: key.path: message", one error per line when
// several values are bad.
class ConfigError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// HTTPS on the listener. The files are read and checked (PEM, key matches certificate) when
// the configuration loads; the server uses the contents, never the paths.
struct Tls {
  std::string cert_file;              // as written in the YAML, for messages
  std::string key_file;
  std::string cert_pem;               // the certificate, then any intermediates
  std::string key_pem;                // the certificate's private key, unencrypted; never logged
};

struct Server {
  std::string listen_host = "127.0.0.1";  // an IPv4 or IPv6 literal, without [brackets]
  std::uint16_t listen_port = 8080;   // 0 = any free port (tests)
  std::size_t max_body_bytes = 64 * 1024;
  std::size_t max_header_bytes = 16 * 1024;
  Millis read_timeout{10'000};        // whole request, headers and body
  Millis idle_timeout{60'000};        // keep-alive connection with no request
  std::size_t max_connections = 1024;
  // Of max_connections, kept for operator requests (health, readiness, status, metrics, admin)
  // when every other one is busy; less than max_connections.
  std::size_t reserved_connections = 8;
  // Connections one client address may hold at once.
  std::size_t max_connections_per_client = 256;
  std::optional<Tls> tls;             // absent: plain HTTP
};

// driver sqlite (the default): one daemon per database file, `path` and the writer's settings.
// driver postgres (docs/postgres.md): several daemons on one PostgreSQL database, `url` or
// `url_file`, `pool_size`, `write_connections` and `max_batch`. The settings of the other driver
// are refused, not ignored.
struct Database {
  std::string driver = "sqlite";      // "sqlite" or "postgres"
  std::string path = "payorch.db";   // relative to the working directory, not the config file
  int busy_retries = 5;               // bounded SQLITE_BUSY retries before a 503
  Millis busy_timeout{200};           // per attempt
  std::size_t max_batch = 256;        // jobs sharing one commit (group commit); postgres: 64
  // A libpq connection URI (postgresql://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=...), given
  // inline or read from url_file when the configuration loads. It holds the password: never
  // log it (store::pg::redacted_url masks it).
  std::string url;
  std::string url_file;               // as written in the YAML, "" when url was inline
  // Connections each daemon keeps; every one is a server process, and every node's pool counts
  // against the server's max_connections (100 by default).
  std::size_t pool_size = 8;
  // Of the pool, the connections that run write transactions (each one batch at a time); the
  // others serve reads. 0: half the pool, at least one (write_connections_of).
  std::size_t write_connections = 0;
};
inline constexpr std::size_t max_pool_size = 256;
inline constexpr std::size_t max_postgres_batch = 64;
inline std::size_t write_connections_of(const Database& db) {
  return db.write_connections != 0 ? db.write_connections : std::max<std::size_t>(1, db.pool_size / 2);
}

// callback_inbox must cover every provider's callback.retry_horizon: a duplicate that arrives
// after its inbox row was purged would no longer be recognised as one.
struct Retention {
  Millis callback_inbox{std::chrono::hours(24 * 30)};
  Millis delivered_events{std::chrono::hours(24 * 7)};
};

// workers: vendor calls in flight at once, over every provider. Calls are asynchronous (no
// thread per call), so hundreds cost little; they bound how much work is leased at a time.
struct Engine {
  // This node's name in logs (node=…), /status and its lease owner ids; the same across its
  // restarts, different for every node on one database. "": the host name (daemon::node_id).
  std::string node_id;
  int workers = 256;
  Millis lease{30'000};
  Millis poll_interval{500};
  // Per provider: after `failures` consecutive certain-not-sent calls, stop claiming its
  // payments and probe it with one call at a time, at most one per probe_interval.
  Breaker::Options breaker;
};

// A tenant's push endpoint (docs/contract.md §6). timeout bounds one push, connect included; a failed push
// is retried after initial_backoff, doubling up to max_backoff, for as long as it takes.
struct Webhook {
  std::string url;
  std::string secret;                 // signs Payorch-Signature; never logged
  Millis timeout{10'000};
  Millis initial_backoff{1'000};
  Millis max_backoff{std::chrono::minutes(5)};
};

// admin.operators[]: a person or tool with its own admin token. The name is what resolutions
// and other admin writes record as their author.
struct Operator {
  std::string name;                   // 1-64 characters of [A-Za-z0-9._@-]
  std::string token;                  // never logged
};

// The name admin.token (the legacy single admin token) answers to.
inline constexpr std::string_view legacy_admin_operator = "admin";

struct Tenant {
  std::string id;
  std::string token;                  // never logged
  std::optional<Webhook> webhook;
};

// The vendor request timeout is the contract's (Contract::request_timeout, timeouts.request in
// the YAML).
struct Timeouts {
  Millis connect{2'000};
};

struct Callback {
  std::string secret;
  Millis tolerance{300'000};
  Millis retry_horizon{std::chrono::hours(24)};
};

// providers[].options (docs/contract.md §9): settings of one adapter alone. Which names each
// adapter takes is decided in config/providers.cpp; any other name is an error.
struct AdapterOptions {
  std::string merchant_account;       // adyen: the merchantAccount of every request
  // wechatpay (API v3) and alipay. Keys are read from their *_file settings only; the
  // strings hold the files' contents.
  std::string mchid;                  // wechatpay: the merchant id
  std::string appid;                  // wechatpay: the app id orders are made for
  std::string serial_no;              // wechatpay: the serial of the merchant's certificate
  std::string private_key;            // wechatpay, alipay: the merchant's RSA key (PEM), signs requests
  std::string platform_serial;        // wechatpay: the serial of the platform key below
  std::string platform_public_key;    // wechatpay: verifies answers and callbacks (PEM)
  std::string api_v3_key;             // wechatpay: 32 bytes, decrypts callback resources
  std::string app_id;                 // alipay: the application id
  std::string alipay_public_key;      // alipay: verifies answers and notifications (PEM)
  std::string product;                // wechatpay: codepay | native | jsapi; alipay: pay | precreate
  std::string notify_url;             // wechatpay, alipay: this provider's public callback URL
  // alipay precreate: how long the QR code and its order stay payable (whole minutes, 1m..15d;
  // default 2h), sent as qr_code_timeout_express and timeout_express; the contract's
  // order_expiry.
  Millis order_expiry{std::chrono::hours(2)};
};

struct Provider {
  std::string name;
  std::string adapter;                // "sim", "stripe", "adyen", "wechatpay", "alipay"
  std::string base_url;               // http(s)://…, stored without a trailing slash
  std::string api_key;
  Timeouts timeouts;
  // What the decisions (core/decide.h) take, read from contract: (key_retention and recovery
  // are required: a guessed retention window is how a late retry charges twice;
  // not_found_final_after defaults to never, the cautious reading), retry:, timeouts.request
  // and engine.lease.
  payorch::Contract contract;
  RiskCap risk;
  Callback callback;
  AdapterOptions options;
  // Where api_key, callback.secret and the adapter keys (options' keys and their serials) are
  // read from once serving (config/secrets.h, ProviderSecrets); null: the values above.
  std::shared_ptr<LiveSecrets> live;
};

// log: what payorchd writes to stderr (docs/operations.md, "Logs and request tracing").
struct Log {
  log::Level level = log::Level::info;  // lines below it are dropped
  bool access = true;                   // one event=http.access line per request answered
};

struct Config {
  std::string source_path;            // the file it came from
  Server server;
  Database database;
  Retention retention;
  Engine engine;
  Log log;
  std::string admin_token;            // admin.token; "" when only operators are configured
  std::vector<Operator> operators;    // admin.operators[]
  std::vector<Tenant> tenants;
  std::vector<Provider> providers;
  std::string default_provider;
  // Each top-level section but admin, as written with its secrets (token, secret, api_key,
  // cert_file, key_file, the adapter keys and serials, and their *_file forms) left out: a
  // reload that changes one of these
  // needs a restart (config/secrets.h, restart_only_changes).
  std::map<std::string, std::string, std::less<>> restart_sections;
  // The secret-bearing values as they are now, replaced whole by a reload (config/secrets.h).
  // Set by the daemon before it serves; null elsewhere: readers then use the values above.
  std::shared_ptr<LiveSecrets> live;

  // nullptr when no provider has that name.
  const Provider* find_provider(std::string_view name) const;
};

// The longest duration accepted anywhere, so that `now + duration` can never overflow.
inline constexpr Millis max_duration{std::chrono::hours(24 * 3650)};

// Parses a duration: "250ms", "2s", "5m", "24h", "7d" (a positive integer and a unit, at most
// max_duration). Returns nullopt for anything else ("0s", "1.5s", "-2s", "2", "2 s", "2sec").
std::optional<Millis> parse_duration(std::string_view text);

// Loads, resolves *_file secrets (relative paths are relative to the config file's folder;
// `${CREDENTIALS_DIRECTORY}` is taken from the environment) and validates. Throws ConfigError listing every problem found, each with its line.
Config load(const std::string& path);

// The same, from YAML text (`name` is used in messages and to resolve relative paths).
Config load_from_string(const std::string& yaml, const std::string& name);

}  // namespace payorch::config
