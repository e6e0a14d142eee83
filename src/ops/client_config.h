#pragma once
// Where the operator commands find the daemon and its admin token, without the daemon's whole
// configuration (whose secrets an operator's account need not be able to read). Sources, first
// that applies wins (docs/operations.md, "Operator commands"):
//   1. --url URL, --token-file FILE, --ca-file FILE on the command line (each overrides the same
//      setting of 2 and 3);
//   2. --client-config FILE: a small YAML file,
//        url: https://127.0.0.1:8443     # http:// or https://, host and port
//        token_file: admin.token         # or token: …; relative to the file's folder;
//                                        # ${CREDENTIALS_DIRECTORY} expands
//        ca_file: ca.pem                 # optional: trust only these PEM certificates
//      errors are line-numbered like the daemon's configuration;
//   3. the environment: PAYORCH_URL, PAYORCH_TOKEN_FILE, PAYORCH_CA_FILE;
//   4. --config FILE, the daemon's configuration (server.listen, server.tls, admin.token):
//      when none of the above is given (default /etc/payorch/payorchd.yaml).
// --config together with --url/--token-file/--client-config is a usage error.
#include <cstdint>
#include <optional>
#include <string>

#include "ops/admin_client.h"

namespace payorch::ops {

struct ClientSettings {
  DaemonAddress address;
  std::string token;
  std::optional<std::string> ca_file;  // PEM file: the only trust anchors for HTTPS
};

// "http://HOST:PORT" or "https://HOST:PORT" (an IPv6 host in brackets, no path but "/").
// Throws std::invalid_argument with a message naming `where` when it is not one.
DaemonAddress parse_daemon_url(const std::string& url, const std::string& where);

// Reads a --client-config file. Throws config::ConfigError with every problem, one per line
// ("FILE:LINE:COL: key: message").
ClientSettings load_client_config(const std::string& path);

}  // namespace payorch::ops
