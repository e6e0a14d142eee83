#include "support/vendor_sim.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

// PAYORCH_TEST_VENDOR_SIM runs the suite against another build of the sim.
std::string vendor_sim_path() {
  const char* override_path = std::getenv("PAYORCH_TEST_VENDOR_SIM");
  return override_path && *override_path ? override_path : PAYORCH_VENDOR_SIM_PATH;
}

void expect_ok(const HttpResponse& r, std::string_view what) {
  if (r.status != 200)
    throw std::runtime_error("payorch-vendor-sim " + std::string(what) + ": " + r.describe());
}

}  // namespace

VendorSim::VendorSim(std::vector<std::string> extra_args) : dir_(make_temp_dir("payorch-vsim")) {
  args_ = {"--listen", "127.0.0.1:0", "--port-file", dir_ + "/port", "--db", db_path(),
           "--api-key", vendor_sim_api_key, "--callback-url", "none"};
  args_.insert(args_.end(), extra_args.begin(), extra_args.end());
  start();
}

VendorSim::~VendorSim() {
  process_.kill9();
  remove_temp_dir(dir_);
}

void VendorSim::start(const std::vector<std::string>& extra) {
  const std::string port_file = dir_ + "/port";
  std::error_code ec;
  std::filesystem::remove(port_file, ec);
  port_ = 0;
  std::vector<std::string> argv{vendor_sim_path()};
  argv.insert(argv.end(), args_.begin(), args_.end());
  argv.insert(argv.end(), extra.begin(), extra.end());  // a later flag wins
  process_.spawn(argv, log_path());
  const PortWait wait = wait_for_port_file(process_, port_file, 10s);
  if (wait.port == 0) {
    if (!wait.exited) process_.kill9();
    throw std::runtime_error("payorch-vendor-sim did not start (" +
                             (wait.exited ? wait.exited->describe() : std::string("no port file")) +
                             "):\n" + log_tail());
  }
  port_ = wait.port;
}

void VendorSim::kill9() { process_.kill9(); }

ExitStatus VendorSim::terminate(std::chrono::milliseconds timeout) {
  if (process_.pid() <= 0) throw std::logic_error("VendorSim::terminate: not running");
  return process_.terminate(timeout);
}

void VendorSim::restart() {
  kill9();
  start();
}

void VendorSim::restart_on_same_port() {
  const std::uint16_t port = port_;
  kill9();
  start({"--listen", "127.0.0.1:" + std::to_string(port)});
}

bool VendorSim::running() { return process_.running(); }

std::string VendorSim::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string VendorSim::log_tail(std::size_t max_bytes) const {
  return file_tail(log_path(), max_bytes);
}

HttpResponse VendorSim::post(std::string_view path, const std::string& idempotency_key,
                             const std::string& body, std::chrono::milliseconds timeout) const {
  Headers headers{{"Authorization", std::string("Bearer ") + vendor_sim_api_key},
                  {"Content-Type", "application/json"}};
  if (!idempotency_key.empty()) headers.emplace_back("Idempotency-Key", idempotency_key);
  return http_request(port_, "POST", path, headers, body, timeout);
}

HttpResponse VendorSim::post_charge(const std::string& idempotency_key, const std::string& body,
                                    std::chrono::milliseconds timeout) const {
  return post("/v1/charges", idempotency_key, body, timeout);
}

HttpResponse VendorSim::post_refund(const std::string& idempotency_key, const std::string& body,
                                    std::chrono::milliseconds timeout) const {
  return post("/v1/refunds", idempotency_key, body, timeout);
}

HttpResponse VendorSim::get(const std::string& target) const {
  return http_request(port_, "GET", target,
                      {{"Authorization", std::string("Bearer ") + vendor_sim_api_key}});
}

HttpResponse VendorSim::control(std::string_view method, std::string_view target,
                                const std::string& body) const {
  Headers headers;
  if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
  return http_request(port_, method, target, headers, body);
}

void VendorSim::add_fault(std::string_view mode, std::int64_t count,
                          std::optional<std::int64_t> delay_ms,
                          std::optional<std::string> source,
                          std::optional<std::string> operation) const {
  boost::json::object fault{{"mode", mode}, {"count", count}};
  if (delay_ms) fault["delay_ms"] = *delay_ms;
  if (source) fault["source"] = *source;
  if (operation) fault["operation"] = *operation;
  expect_ok(control("POST", "/_sim/faults", boost::json::serialize(fault)), "POST /_sim/faults");
}

void VendorSim::clear_faults() const {
  expect_ok(control("DELETE", "/_sim/faults"), "DELETE /_sim/faults");
}

void VendorSim::set_config(const boost::json::object& patch) const {
  expect_ok(control("POST", "/_sim/config", boost::json::serialize(patch)), "POST /_sim/config");
}

std::vector<boost::json::object> VendorSim::ledger() const {
  const HttpResponse r = control("GET", "/_sim/ledger");
  expect_ok(r, "GET /_sim/ledger");
  std::vector<boost::json::object> out;
  const boost::json::value body = r.json();
  for (const auto& c : body.as_object().at("charges").as_array()) out.push_back(c.as_object());
  return out;
}

std::int64_t VendorSim::count_charges(const std::string& reference) const {
  SqliteProbe probe(db_path());
  return probe.count("SELECT COUNT(*) FROM charges WHERE reference = ?", {reference});
}

std::vector<SqlRow> VendorSim::charges(const std::string& reference) const {
  SqliteProbe probe(db_path());
  return probe.query(
      "SELECT id, reference, status, decline_code, source, amount_minor, currency, created_at, "
      "updated_at FROM charges WHERE reference = ? ORDER BY created_at, id",
      {reference});
}

std::int64_t VendorSim::count_refunds(const std::string& reference) const {
  SqliteProbe probe(db_path());
  return probe.count("SELECT COUNT(*) FROM refunds WHERE reference = ?", {reference});
}

namespace {

constexpr const char* refund_columns =
    "SELECT id, reference, charge_id, status, decline_code, amount_minor, currency, created_at, "
    "updated_at FROM refunds ";

}  // namespace

std::vector<SqlRow> VendorSim::refunds(const std::string& reference) const {
  SqliteProbe probe(db_path());
  return probe.query(std::string(refund_columns) + "WHERE reference = ? ORDER BY created_at, id",
                     {reference});
}

std::vector<SqlRow> VendorSim::refunds_of_charge(const std::string& charge_id) const {
  SqliteProbe probe(db_path());
  return probe.query(std::string(refund_columns) + "WHERE charge_id = ? ORDER BY created_at, id",
                     {charge_id});
}

int VendorSim::charge_requests_logged(const std::string& reference) const {
  std::istringstream log(read_file(log_path()));
  const std::string needle = "reference=" + reference + " ";
  int n = 0;
  for (std::string line; std::getline(log, line);)
    if (line.starts_with("payorch-vendor-sim ") && line.find(" event=charge.") != std::string::npos &&
        line.find(" event=charge.settled ") == std::string::npos && line.find(needle) != std::string::npos)
      ++n;
  return n;
}

std::string charge_body(const std::string& key, const std::string& source,
                        std::int64_t amount_minor, const std::string& currency,
                        const std::string& payee) {
  boost::json::object o;
  o["amount_minor"] = amount_minor;
  o["currency"] = currency;
  o["payee"] = payee;
  o["source"] = source;
  o["reference"] = key;
  return boost::json::serialize(o);
}

std::string refund_body(const std::string& key, const std::string& charge_id,
                        std::int64_t amount_minor, const std::string& currency) {
  boost::json::object o;
  o["charge"] = charge_id;
  o["amount_minor"] = amount_minor;
  o["currency"] = currency;
  o["reference"] = key;
  return boost::json::serialize(o);
}

CommandResult run_sim_command(const std::vector<std::string>& args,
                              std::chrono::milliseconds timeout) {
  const std::string dir = make_temp_dir("payorch-vsim");
  std::vector<std::string> argv{vendor_sim_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult result = run_to_completion(argv, dir + "/out.log", timeout);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

std::string SimProviderConfig::yaml() const {
  return "  - name: " + name + "\n" +
         "    adapter: " + adapter + "\n" +
         "    base_url: \"" + base_url + "\"\n" +
         (api_key.empty() ? "" : "    api_key: \"" + api_key + "\"\n") +
         "    timeouts: " + timeouts + "\n" +
         "    contract: " + contract + "\n" +
         "    retry: " + retry + "\n" +
         "    risk: " + risk + "\n" +
         (callback.empty() ? "" : "    callback: " + callback + "\n") +
         (options.empty() ? "" : "    options: " + options + "\n");
}

std::string providers_yaml(const std::vector<SimProviderConfig>& providers) {
  std::string out = "providers:\n";
  for (const auto& p : providers) out += p.yaml();
  return out;
}

}  // namespace payorch::test
