#include "support/stripe_emulator.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <filesystem>
#include <stdexcept>

#include "support/adyen_emulator.h"

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

const std::string emulators_dir = std::string(PAYORCH_SOURCE_DIR) + "/tests/emulators";

std::vector<boost::json::object> with_client_key(const boost::json::object& ledger,
                                                 std::string_view list, std::string_view client_key) {
  std::vector<boost::json::object> out;
  for (const auto& v : ledger.at(list).as_array()) {
    const auto& o = v.as_object();
    const auto* metadata = o.if_contains("metadata");
    const auto* key = metadata && metadata->is_object() ? metadata->as_object().if_contains("client_key") : nullptr;
    if (key && key->is_string() && key->as_string() == client_key) out.push_back(o);
  }
  return out;
}

}  // namespace

StripeEmulator::StripeEmulator(std::string webhook_url, int action_delay_ms, std::uint16_t port)
    : webhook_url_(std::move(webhook_url)), action_delay_ms_(action_delay_ms), dir_(make_temp_dir("payorch-stripe-emu")),
      port_(port) {
  start();
}

void StripeEmulator::start() {
  const std::string port_file = dir_ + "/port";
  std::filesystem::remove(port_file);
  std::vector<std::string> argv{PAYORCH_NODE_PATH, emulators_dir + "/stripe/server.js",
                                "--listen", "127.0.0.1:" + std::to_string(port_), "--port-file", port_file,
                                "--ledger", dir_ + "/ledger.jsonl",
                                "--api-key", stripe_emulator_api_key,
                                "--webhook-secret", stripe_emulator_webhook_secret,
                                "--action-delay-ms", std::to_string(action_delay_ms_)};
  if (!webhook_url_.empty()) {
    argv.emplace_back("--webhook-url");
    argv.push_back(webhook_url_);
  }
  process_.spawn(argv, dir_ + "/emulator.log");
  const PortWait wait = wait_for_port_file(process_, port_file, 10s);
  if (wait.port == 0) {
    if (!wait.exited) process_.kill9();
    throw std::runtime_error("the Stripe emulator did not start (" +
                             (wait.exited ? wait.exited->describe() : std::string("no port file")) +
                             "):\n" + log_tail());
  }
  port_ = wait.port;
}

void StripeEmulator::restart() {
  process_.kill9();
  start();
}

bool StripeEmulator::running() { return process_.running(); }

std::string stripe_emulator_missing() { return emulator_missing("the Stripe emulator", ""); }

StripeEmulator::~StripeEmulator() {
  process_.kill9();
  remove_temp_dir(dir_);
}

std::string StripeEmulator::log_tail(std::size_t max_bytes) const {
  return file_tail(dir_ + "/emulator.log", max_bytes);
}

void StripeEmulator::faults(const boost::json::object& body) const {
  const HttpResponse r = http_request(port_, "POST", "/_emu/faults", {}, boost::json::serialize(body));
  if (r.status != 200) throw std::runtime_error("Stripe emulator /_emu/faults: " + r.describe());
}

boost::json::object StripeEmulator::ledger() const {
  const HttpResponse r = http_request(port_, "GET", "/_emu/ledger");
  if (r.status != 200) throw std::runtime_error("Stripe emulator /_emu/ledger: " + r.describe());
  return boost::json::parse(r.body).as_object();
}

bool StripeEmulator::webhooks_acknowledged() const {
  const boost::json::object l = ledger();
  return l.at("webhooks_in_flight").as_int64() == 0 &&
         l.at("webhooks_delivered").as_array().size() >= l.at("events").as_array().size();
}

std::vector<boost::json::object> StripeEmulator::payment_intents(std::string_view client_key) const {
  return with_client_key(ledger(), "payment_intents", client_key);
}

std::vector<boost::json::object> StripeEmulator::refunds(std::string_view client_key) const {
  return with_client_key(ledger(), "refunds", client_key);
}

std::string run_node(const std::string& script) {
  const TempDir dir("payorch-node");
  const std::string path = dir.write("script.js", script);
  // require('stripe') resolves in tests/emulators/node_modules, where tools/deps installs it.
  std::vector<std::string> env = environment_without({});
  env.push_back("NODE_PATH=" + emulators_dir + "/node_modules");
  const CommandResult r = run_to_completion({PAYORCH_NODE_PATH, path}, dir.path() + "/out", 30s, &env);
  if (!r.status.exited || r.status.code != 0)
    throw std::runtime_error("node " + r.status.describe() + ":\n" + r.output);
  return r.output;
}

}  // namespace payorch::test
