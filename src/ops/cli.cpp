// Operator commands (docs/contract.md §7): thin clients of the admin API, over HTTPS when
// server.tls is set.
// Exit codes: 0 done, 1 the daemon refused or could not be reached (the reason on stderr, one
// line), 2 a usage error or an unusable --ca-file.
#include "ops/cli.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/url.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <system_error>

#include "ops/admin_client.h"

namespace payorch::ops {
namespace {

constexpr const char* usage =
    "usage: payorchd <command> [--config FILE] [--ca-file FILE] ...\n"
    "  status                                           daemon status (JSON)\n"
    "  recon list [--status open|resolved] [--limit N] [--cursor ID]\n"
    "  recon show CASE_ID\n"
    "  recon resolve CASE_ID --outcome succeeded|failed_final|retry --note TEXT\n"
    "                [--vendor-reference REF] [--operator NAME]\n"
    "  recon import --provider NAME FILE.csv\n"
    "  payment show PAYMENT_ID                          the payment and its refunds\n"
    "  refund show REFUND_ID | OPERATION_ID --tenant TENANT\n"
    "With server.tls the commands speak HTTPS and verify the daemon's certificate chain and that\n"
    "it names the listen address; --ca-file FILE trusts only the PEM certificates in FILE (the\n"
    "CA that signed it, or the certificate itself) instead of the system trust store.\n";

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
struct CaFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_ca_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw CaFileError("cannot read --ca-file " + path);
  if (text.str().find("-----BEGIN CERTIFICATE-----") == std::string::npos)
    throw CaFileError("--ca-file " + path + " holds no PEM certificate");
  return text.str();
}

// One positional argument: an id that goes into a URL path.
std::string one_id(const Parsed& p, std::string_view what) {
  if (p.positional.size() != 1) throw UsageError("expected exactly one " + std::string(what));
  const std::string& id = p.positional[0];
  const bool ok = !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!ok) throw UsageError("'" + id + "' is not a valid " + std::string(what));
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
                                       const std::string& body = {}, const std::string& content_type = {},
                                       const std::string& operator_name = {}) {
  ClientResponse r = client.request(method, target, body, content_type, operator_name);
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

int print_json(const std::optional<boost::json::value>& v) {
  if (!v) return 1;
  std::printf("%s\n", pretty_json(*v).c_str());
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

int recon_list(AdminClient& client, const Parsed& p) {
  no_positional(p);
  boost::urls::url target("/v1/reconciliation");
  for (const char* name : {"status", "limit", "cursor"})
    if (auto v = option(p, name)) target.params().append({name, *v});
  auto page = call(client, "GET", std::string(target.buffer()));
  if (!page) return 1;
  const std::vector<std::string> columns{"id", "reason", "status", "payment_id", "refund_id", "opened_at"};
  std::vector<std::vector<std::string>> rows{columns};
  if (const auto* data = page->as_object().if_contains("data"); data && data->is_array())
    for (const auto& c : data->as_array()) {
      std::vector<std::string> row;
      for (const auto& col : columns) row.push_back(field(c, col));
      rows.push_back(std::move(row));
    }
  if (rows.size() == 1) {
    std::printf("no reconciliation cases\n");
  } else {
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
  const std::string next = field(*page, "next_cursor");
  if (!next.empty() && next != "-") std::printf("more: payorchd recon list --cursor %s\n", next.c_str());
  return 0;
}

int recon_resolve(AdminClient& client, const Parsed& p) {
  const std::string case_id = one_id(p, "case id");
  boost::json::object body{{"outcome", required(p, "outcome")}, {"note", required(p, "note")}};
  if (auto ref = option(p, "vendor-reference")) body["vendor_reference"] = *ref;
  auto r = call(client, "POST", "/v1/reconciliation/" + case_id + "/resolve",
                boost::json::serialize(body), "application/json", option(p, "operator").value_or(""));
  if (!r) return 1;
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

int recon_import(AdminClient& client, const Parsed& p) {
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
  return print_json(call(client, "POST", std::string(target.buffer()), text.str(), "text/csv"));
}

// A refund by its id (re_…), or by a tenant's operation_id: operation_ids are unique per
// tenant only.
int refund_show(AdminClient& client, const Parsed& p) {
  const std::string id = one_id(p, "refund id or operation_id");
  const std::optional<std::string> tenant = option(p, "tenant");
  if (!tenant && !id.starts_with("re_"))
    throw UsageError("'" + id + "' is not a refund id (re_…): name its tenant with --tenant TENANT");
  boost::urls::url target("/v1/admin/refunds/" + id);
  if (tenant) target.params().append({"tenant_id", *tenant});
  return print_json(call(client, "GET", std::string(target.buffer())));
}

int run(AdminClient& client, const std::string& command, const std::vector<std::string>& args) {
  if (command == "status") {
    no_positional(parse(args, 0, {}));
    return print_json(call(client, "GET", "/status"));
  }
  const std::string sub = args.empty() ? "" : args[0];
  if (command == "payment" && sub == "show")
    return print_json(call(client, "GET",
                           "/v1/admin/payments/" + one_id(parse(args, 1, {}), "payment id")));
  if (command == "refund" && sub == "show") return refund_show(client, parse(args, 1, {"tenant"}));
  if (command == "refund")
    throw UsageError(sub.empty() ? "refund needs a subcommand" : "unknown subcommand 'refund " + sub + "'");
  if (command != "recon") throw UsageError("unknown command '" + command + (sub.empty() ? "" : " " + sub) + "'");
  if (sub == "list") return recon_list(client, parse(args, 1, {"status", "limit", "cursor"}));
  if (sub == "show")
    return print_json(call(client, "GET", "/v1/reconciliation/" + one_id(parse(args, 1, {}), "case id")));
  if (sub == "resolve")
    return recon_resolve(client, parse(args, 1, {"outcome", "note", "vendor-reference", "operator"}));
  if (sub == "import") return recon_import(client, parse(args, 1, {"provider"}));
  throw UsageError(sub.empty() ? "recon needs a subcommand" : "unknown subcommand 'recon " + sub + "'");
}

}  // namespace

bool is_operator_command(const std::string& command) {
  return command == "status" || command == "recon" || command == "payment" || command == "refund";
}

int run_operator_command(const config::Config& cfg, const std::string& command,
                         const std::vector<std::string>& args) {
  if (cfg.server.listen_port == 0) {
    std::fprintf(stderr,
                 "payorchd: server.listen in %s has port 0 (any free port); operator commands "
                 "need the daemon's actual port\n",
                 cfg.source_path.c_str());
    return 2;
  }
  const DaemonAddress address{cfg.server.listen_host, cfg.server.listen_port, cfg.server.tls.has_value()};
  try {
    std::vector<std::string> rest = args;
    const std::optional<std::string> ca_file = take_common_option(rest, "ca-file");
    std::optional<std::string> ca_pem;
    if (ca_file) ca_pem = read_ca_file(*ca_file);
    std::optional<AdminClient> client;
    try {
      client.emplace(address, cfg.admin_token, std::move(ca_pem));
    } catch (const std::system_error& e) {
      throw CaFileError((ca_file ? "--ca-file " + *ca_file : std::string("the system trust store")) +
                        " cannot be loaded: " + e.what());
    }
    return run(*client, command, rest);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "payorchd: %s\n%s", e.what(), usage);
    return 2;
  } catch (const CaFileError& e) {
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
