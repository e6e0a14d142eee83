// Operator commands (docs/operations.md, "Operator commands"): thin clients of the admin API,
// over HTTPS for an https:// daemon (or server.tls in the daemon's configuration).
// Exit codes: 0 done, 1 the daemon refused or could not be reached (the reason on stderr, one
// line), 2 a usage error, an invalid client configuration, or an unusable --ca-file or token file.
#include "ops/cli.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/url.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>

#include "config/config.h"
#include "config/reader.h"
#include "core/intent.h"
#include "core/names.h"
#include "ops/admin_client.h"
#include "ops/client_config.h"

namespace payorch::ops {
namespace {

// The usage of each operator command, and the options all of them take.
constexpr const char* common_usage =
    "Where the daemon is (docs/operations.md, \"Operator commands\"; the first given applies):\n"
    "  --url URL --token-file FILE [--ca-file FILE]   http(s)://HOST:PORT and the admin token\n"
    "  --client-config FILE                           a YAML file: url, token_file, ca_file\n"
    "  PAYORCH_URL, PAYORCH_TOKEN_FILE, PAYORCH_CA_FILE in the environment\n"
    "  --config FILE                                  the daemon's configuration\n"
    "                                                 (default /etc/payorch/payorchd.yaml)\n"
    "  --json                                         print the API's JSON document instead\n"
    "Over HTTPS the commands verify the daemon's certificate chain and that it names the\n"
    "address; --ca-file FILE trusts only the PEM certificates in FILE instead of the system\n"
    "trust store. Exit codes: 0 done, 1 refused or unreachable, 2 usage error.\n";

constexpr const char* status_usage =
    "usage: payorchd status [--json]\n"
    "  the daemon's /status: readiness, payments by state, exposure, reconciliation, outbox\n";
constexpr const char* recon_usage =
    "usage: payorchd recon list [--status open|resolved] [--limit N] [--cursor ID] [--json]\n"
    "       payorchd recon show CASE_ID [--json]\n"
    "       payorchd recon resolve CASE_ID --outcome succeeded|failed_final|retry --note TEXT\n"
    "                              [--vendor-reference REF] [--json]\n"
    "       payorchd recon import --provider NAME FILE.csv [--json]\n"
    "  reconciliation cases; a resolution is recorded under the operator the admin token names\n";
constexpr const char* payment_usage =
    "usage: payorchd payment show PAYMENT_ID | OPERATION_ID [--tenant TENANT] [--json]\n"
    "  any tenant's payment and its refunds, by its id (pay_...) or by an operation_id\n"
    "  (operation_ids are unique per tenant only: when several tenants have one, name the\n"
    "  tenant with --tenant)\n";
constexpr const char* refund_usage =
    "usage: payorchd refund show REFUND_ID | OPERATION_ID --tenant TENANT [--json]\n"
    "  any tenant's refund, by its id (re_...) or by the tenant's operation_id\n";

std::string usage_of(const std::string& command) {
  const char* own = command == "status"    ? status_usage
                    : command == "recon"   ? recon_usage
                    : command == "payment" ? payment_usage
                    : command == "refund"  ? refund_usage
                                           : "";
  return std::string(own) + common_usage;
}

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "--name VALUE" / "--name=VALUE" options (each allowed once) and positional arguments.
struct Parsed {
  std::map<std::string, std::string> options;
  std::vector<std::string> positional;
};

Parsed parse(const std::vector<std::string>& args, std::size_t from,
             std::initializer_list<std::string_view> allowed) {
  Parsed p;
  for (std::size_t i = from; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!a.starts_with("--")) {
      p.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      throw UsageError("--" + name + " needs a value");
    }
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      throw UsageError("unknown option --" + name);
    if (!p.options.emplace(name, value).second) throw UsageError("--" + name + " given twice");
  }
  return p;
}

std::optional<std::string> option(const Parsed& p, const std::string& name) {
  auto it = p.options.find(name);
  if (it == p.options.end()) return std::nullopt;
  return it->second;
}

std::string required(const Parsed& p, const std::string& name) {
  auto v = option(p, name);
  if (!v || v->empty()) throw UsageError("--" + name + " is required");
  return *v;
}

// Takes "--NAME VALUE" / "--NAME=VALUE", an option of every command, out of `args` wherever it
// stands.
std::optional<std::string> take_common_option(std::vector<std::string>& args, const std::string& name) {
  std::optional<std::string> value;
  for (std::size_t i = 0; i < args.size();) {
    std::size_t taken = 1;
    std::string v;
    if (args[i] == "--" + name) {
      if (i + 1 == args.size()) throw UsageError("--" + name + " needs a value");
      v = args[i + 1];
      taken = 2;
    } else if (args[i].starts_with("--" + name + "=")) {
      v = args[i].substr(name.size() + 3);
    } else {
      ++i;
      continue;
    }
    if (value) throw UsageError("--" + name + " given twice");
    value = std::move(v);
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i + taken));
  }
  return value;
}

// The trust anchors of --ca-file: PEM certificates. Exit code 2 (like a usage error) when the
// file cannot be read or holds none.
struct LocalFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_ca_file(const std::string& path) {
  std::string os_error;
  std::optional<std::string> text = config::detail::read_whole_file(path, os_error);
  if (!text) throw LocalFileError("cannot read --ca-file " + path);
  if (text->find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    throw LocalFileError("--ca-file " + path + " holds no PEM certificate");
  return std::move(*text);
}

// One positional argument: an id that goes into a URL path.
std::string one_id(const Parsed& p, std::string_view what) {
  if (p.positional.size() != 1) throw UsageError("expected exactly one " + std::string(what));
  const std::string& id = p.positional[0];
  if (!is_id_text(id, 128)) throw UsageError("'" + id + "' is not a valid " + std::string(what));
  return id;
}

void no_positional(const Parsed& p) {
  if (!p.positional.empty()) throw UsageError("unexpected argument '" + p.positional[0] + "'");
}

// Prints the daemon's refusal (RFC 9457 problem details) for the operator.
int report_failure(const ClientResponse& r) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(r.body, ec);
  if (ec || !v.is_object()) {
    std::fprintf(stderr, "payorchd: HTTP %u: %s\n", r.status, r.body.substr(0, 300).c_str());
    return 1;
  }
  const auto& o = v.as_object();
  auto text = [&](const boost::json::object& obj, std::string_view key) -> std::string {
    auto it = obj.find(key);
    return it != obj.end() && it->value().is_string() ? std::string(it->value().as_string()) : "";
  };
  std::string code = text(o, "type");
  code = code.substr(code.rfind('/') + 1);
  std::fprintf(stderr, "payorchd: HTTP %u %s: %s\n", r.status, code.c_str(), text(o, "detail").c_str());
  if (auto it = o.find("errors"); it != o.end() && it->value().is_array())
    for (const auto& e : it->value().as_array())
      if (e.is_object())
        std::fprintf(stderr, "  %s: %s\n", text(e.as_object(), "field").c_str(),
                     text(e.as_object(), "message").c_str());
  return 1;
}

// Runs one request; prints the failure and returns nullopt on a non-2xx answer.
std::optional<boost::json::value> call(AdminClient& client, std::string_view method, const std::string& target,
                                       const std::string& body = {}, const std::string& content_type = {}) {
  ClientResponse r = client.request(method, target, body, content_type);
  if (r.status < 200 || r.status > 299) {
    report_failure(r);
    return std::nullopt;
  }
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(r.body, ec);
  if (ec) {
    std::fprintf(stderr, "payorchd: the daemon answered %u with a body that is not JSON\n", r.status);
    return std::nullopt;
  }
  return v;
}

// How results are printed: for people (tables, sentences, indented JSON), or with --json the
// API's answer as one JSON document on one line.
struct Output {
  bool json = false;
};

int print_json(const std::optional<boost::json::value>& v, Output out) {
  if (!v) return 1;
  std::printf("%s\n", out.json ? boost::json::serialize(*v).c_str() : pretty_json(*v).c_str());
  return 0;
}

std::string field(const boost::json::value& v, std::string_view key) {
  const auto* o = v.if_object();
  if (!o) return "";
  auto it = o->find(key);
  if (it == o->end() || it->value().is_null()) return "-";
  return it->value().is_string() ? std::string(it->value().as_string())
                                 : boost::json::serialize(it->value());
}

// `items`' `columns` as an aligned table with a header line.
void print_table(const boost::json::array& items, const std::vector<std::string>& columns) {
  std::vector<std::vector<std::string>> rows{columns};
  for (const auto& item : items) {
    std::vector<std::string> row;
    for (const auto& col : columns) row.push_back(field(item, col));
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width(columns.size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i)
      line += row[i] + (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
    std::printf("%s\n", line.c_str());
  }
}

const boost::json::array& array_at(const boost::json::value& v, std::string_view key) {
  static const boost::json::array none;
  const auto* o = v.if_object();
  const auto* a = o ? o->if_contains(key) : nullptr;
  return a && a->is_array() ? a->as_array() : none;
}

int recon_list(AdminClient& client, const Parsed& p, Output out) {
  no_positional(p);
  boost::urls::url target("/v1/reconciliation");
  for (const char* name : {"status", "limit", "cursor"})
    if (auto v = option(p, name)) target.params().append({name, *v});
  auto page = call(client, "GET", std::string(target.buffer()));
  if (!page || out.json) return print_json(page, out);
  const boost::json::array& data = array_at(*page, "data");
  if (data.empty()) std::printf("no reconciliation cases\n");
  else print_table(data, {"id", "reason", "status", "payment_id", "refund_id", "opened_at"});
  for (const auto& u : array_at(*page, "unreadable"))
    std::printf("unreadable case %s: %s\n", field(u, "id").c_str(), field(u, "detail").c_str());
  const std::string next = field(*page, "next_cursor");
  if (!next.empty() && next != "-") std::printf("more: payorchd recon list --cursor %s\n", next.c_str());
  return 0;
}

int recon_resolve(AdminClient& client, const Parsed& p, Output out) {
  const std::string case_id = one_id(p, "case id");
  boost::json::object body{{"outcome", required(p, "outcome")}, {"note", required(p, "note")}};
  if (auto ref = option(p, "vendor-reference")) body["vendor_reference"] = *ref;
  auto r = call(client, "POST", "/v1/reconciliation/" + case_id + "/resolve",
                boost::json::serialize(body), "application/json");
  if (!r || out.json) return print_json(r, out);
  const auto& o = r->as_object();
  const boost::json::value& c = o.at("case");
  // The row the case was about: a payment's case answers "payment", a refund's "refund".
  const auto* refund = o.if_contains("refund");
  const bool about_refund = refund && refund->is_object();
  const boost::json::value& row = about_refund ? *refund : o.at("payment");
  const auto* resolution = c.as_object().if_contains("resolution");
  std::printf("case %s resolved (%s) by %s; %s %s is %s\n", field(c, "id").c_str(),
              resolution ? field(*resolution, "outcome").c_str() : "?",
              resolution ? field(*resolution, "by").c_str() : "?", about_refund ? "refund" : "payment",
              field(row, "id").c_str(), field(row, "state").c_str());
  return 0;
}

int recon_import(AdminClient& client, const Parsed& p, Output out) {
  const std::string provider = required(p, "provider");
  if (p.positional.size() != 1) throw UsageError("expected exactly one settlement file");
  std::ifstream in(p.positional[0], std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "payorchd: cannot read %s\n", p.positional[0].c_str());
    return 1;
  }
  boost::urls::url target("/v1/reconciliation/import");
  target.params().append({"provider", provider});
  return print_json(call(client, "POST", std::string(target.buffer()), text.str(), "text/csv"), out);
}

// A payment by its id (pay_…), or by an operation_id, which is unique per tenant only: the
// daemon answers every tenant's payment of that name; more than one needs --tenant.
int payment_show(AdminClient& client, const Parsed& p, Output out) {
  if (p.positional.size() != 1) throw UsageError("expected exactly one payment id or operation_id");
  const std::string& id = p.positional[0];
  if (!valid_operation_id(id)) throw UsageError("'" + id + "' is neither a payment id nor an operation_id");
  const std::optional<std::string> tenant = option(p, "tenant");
  // An operation_id that itself starts with "pay_" is looked up as one with --tenant.
  if (id.starts_with("pay_") && !tenant)
    return print_json(call(client, "GET", "/v1/admin/payments/" + id), out);
  boost::urls::url target("/v1/admin/payments");
  target.params().append({"operation_id", id});
  if (tenant) target.params().append({"tenant_id", *tenant});
  auto found = call(client, "GET", std::string(target.buffer()));
  if (!found) return 1;
  const boost::json::array& payments = array_at(*found, "payments");
  if (payments.size() == 1) {
    // The payment with its refunds, as for a payment id.
    const std::string pay_id = field(payments[0], "id");
    return print_json(call(client, "GET", "/v1/admin/payments/" + pay_id), out);
  }
  if (out.json) print_json(found, out);
  if (payments.empty()) {
    std::fprintf(stderr, "payorchd: no payment has operation_id %s%s\n", id.c_str(),
                 tenant ? (" for tenant " + *tenant).c_str() : "");
    return 1;
  }
  if (!out.json) print_table(payments, {"id", "tenant_id", "state", "amount_minor", "currency", "created_at"});
  std::fprintf(stderr, "payorchd: %zu tenants have a payment with operation_id %s: name one with --tenant TENANT\n",
               payments.size(), id.c_str());
  return 1;
}

// A refund by its id (re_…), or by a tenant's operation_id: operation_ids are unique per
// tenant only.
int refund_show(AdminClient& client, const Parsed& p, Output out) {
  const std::string id = one_id(p, "refund id or operation_id");
  const std::optional<std::string> tenant = option(p, "tenant");
  if (!tenant && !id.starts_with("re_"))
    throw UsageError("'" + id + "' is not a refund id (re_…): name its tenant with --tenant TENANT");
  boost::urls::url target("/v1/admin/refunds/" + id);
  if (tenant) target.params().append({"tenant_id", *tenant});
  return print_json(call(client, "GET", std::string(target.buffer())), out);
}

int run(AdminClient& client, const std::string& command, const std::vector<std::string>& args, Output out) {
  if (command == "status") {
    no_positional(parse(args, 0, {}));
    return print_json(call(client, "GET", "/status"), out);
  }
  const std::string sub = args.empty() ? "" : args[0];
  if (command == "payment" && sub == "show") return payment_show(client, parse(args, 1, {"tenant"}), out);
  if (command == "payment")
    throw UsageError(sub.empty() ? "payment needs a subcommand" : "unknown subcommand 'payment " + sub + "'");
  if (command == "refund" && sub == "show") return refund_show(client, parse(args, 1, {"tenant"}), out);
  if (command == "refund")
    throw UsageError(sub.empty() ? "refund needs a subcommand" : "unknown subcommand 'refund " + sub + "'");
  if (command != "recon") throw UsageError("unknown command '" + command + (sub.empty() ? "" : " " + sub) + "'");
  if (sub == "list") return recon_list(client, parse(args, 1, {"status", "limit", "cursor"}), out);
  if (sub == "show")
    return print_json(call(client, "GET", "/v1/reconciliation/" + one_id(parse(args, 1, {}), "case id")), out);
  if (sub == "resolve") return recon_resolve(client, parse(args, 1, {"outcome", "note", "vendor-reference"}), out);
  if (sub == "import") return recon_import(client, parse(args, 1, {"provider"}), out);
  throw UsageError(sub.empty() ? "recon needs a subcommand" : "unknown subcommand 'recon " + sub + "'");
}

// A usage error for an unknown subcommand, before anything is read or connected to.
void check_subcommand(const std::string& command, const std::vector<std::string>& args) {
  if (command == "status") return;
  const std::string sub = args.empty() ? "" : args[0];
  const bool known = command == "recon" ? (sub == "list" || sub == "show" || sub == "resolve" || sub == "import")
                                        : sub == "show";
  if (!known)
    throw UsageError(sub.empty() ? command + " needs a subcommand" : "unknown subcommand '" + command + " " + sub + "'");
}

// Takes a flag without a value ("--json") out of `args`; true when it was there.
bool take_flag(std::vector<std::string>& args, const std::string& name) {
  const auto it = std::find(args.begin(), args.end(), "--" + name);
  if (it == args.end()) return false;
  args.erase(it);
  if (std::find(args.begin(), args.end(), "--" + name) != args.end())
    throw UsageError("--" + name + " given twice");
  return true;
}

std::optional<std::string> environment(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

// The secret in a token file: its contents without trailing whitespace.
std::string read_token_file(const std::string& path) {
  // The daemon's rule for a secret file: trailing whitespace dropped, empty refused,
  // ${CREDENTIALS_DIRECTORY} expanded.
  const config::detail::Reader reader("--token-file", ".");
  std::string problem;
  std::optional<std::string> token = reader.read_secret_file(path, problem);
  if (!token) throw LocalFileError("the admin token: " + problem);
  return std::move(*token);
}

// Where the daemon is and its admin token, from the sources of ops/client_config.h; takes their
// options out of `args`.
ClientSettings client_settings(std::vector<std::string>& args) {
  const std::optional<std::string> config_file = take_common_option(args, "config");
  const std::optional<std::string> client_config = take_common_option(args, "client-config");
  const std::optional<std::string> url = take_common_option(args, "url");
  const std::optional<std::string> token_file = take_common_option(args, "token-file");
  const std::optional<std::string> ca_file = take_common_option(args, "ca-file");
  const bool client_options = client_config || url || token_file;
  if (config_file && client_options)
    throw UsageError("--config (the daemon's configuration) and --url/--token-file/--client-config "
                     "name the daemon twice: give one of them");
  const bool from_environment = !config_file && !client_options && environment("PAYORCH_URL");
  if (!client_options && !from_environment) {
    const std::string path = config_file.value_or("/etc/payorch/payorchd.yaml");
    const config::Config cfg = config::load(path);
    if (cfg.server.listen_port == 0)
      throw LocalFileError("server.listen in " + path +
                        " has port 0 (any free port); operator commands need the daemon's actual "
                        "port: give --url");
    if (cfg.admin_token.empty())
      throw LocalFileError(path + " has no admin.token (only admin.operators): give your operator's "
                           "token with --token-file, --client-config or PAYORCH_TOKEN_FILE");
    return ClientSettings{{cfg.server.listen_host, cfg.server.listen_port, cfg.server.tls.has_value()},
                          cfg.admin_token, ca_file};
  }
  ClientSettings s;
  if (client_config) s = load_client_config(*client_config);
  if (url) {
    s.address = parse_daemon_url(*url, "--url");
  } else if (!client_config) {
    const std::optional<std::string> env_url = environment("PAYORCH_URL");
    if (!env_url) throw UsageError("--url (or --client-config, or PAYORCH_URL) is required");
    s.address = parse_daemon_url(*env_url, "PAYORCH_URL");
  }
  if (token_file) {
    s.token = read_token_file(*token_file);
  } else if (!client_config) {
    const std::optional<std::string> env_token = environment("PAYORCH_TOKEN_FILE");
    if (!env_token) throw UsageError("--token-file (or --client-config, or PAYORCH_TOKEN_FILE) is required");
    s.token = read_token_file(*env_token);
  }
  if (ca_file) s.ca_file = ca_file;
  else if (!client_config) s.ca_file = environment("PAYORCH_CA_FILE");
  return s;
}

}  // namespace

bool is_operator_command(const std::string& command) {
  return command == "status" || command == "recon" || command == "payment" || command == "refund";
}

std::string operator_usage(const std::string& command) { return usage_of(command); }

int run_operator_command(const std::string& command, const std::vector<std::string>& args) {
  try {
    std::vector<std::string> rest = args;
    if (std::find(rest.begin(), rest.end(), "--operator") != rest.end() ||
        std::any_of(rest.begin(), rest.end(), [](const std::string& a) { return a.starts_with("--operator="); }))
      throw UsageError("--operator is gone: the operator is the one the admin token names");
    const Output out{take_flag(rest, "json")};
    check_subcommand(command, rest);
    const ClientSettings settings = client_settings(rest);
    std::optional<std::string> ca_pem;
    if (settings.ca_file) ca_pem = read_ca_file(*settings.ca_file);
    std::optional<AdminClient> client;
    try {
      client.emplace(settings.address, settings.token, std::move(ca_pem));
    } catch (const std::system_error& e) {
      throw LocalFileError((settings.ca_file ? "--ca-file " + *settings.ca_file : std::string("the system trust store")) +
                        " cannot be loaded: " + e.what());
    }
    return run(*client, command, rest, out);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "payorchd: %s\n%s", e.what(), usage_of(command).c_str());
    return 2;
  } catch (const LocalFileError& e) {
    std::fprintf(stderr, "payorchd: %s\n", e.what());
    return 2;
  } catch (const config::ConfigError& e) {
    std::fprintf(stderr, "payorchd: invalid configuration:\n%s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "payorchd: %s\n", e.what());
    return 2;
  } catch (const TransportError& e) {
    std::fprintf(stderr, "%s\n", e.what());  // "payorchd is not running at HOST:PORT ..."
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payorchd: %s\n", e.what());
    return 1;
  }
}

}  // namespace payorch::ops
