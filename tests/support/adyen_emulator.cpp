#include "support/adyen_emulator.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "support/http_client.h"

namespace payorch::test {
namespace {

const std::string emulator_dir = std::string(PAYORCH_SOURCE_DIR) + "/tests/emulators/adyen";

}  // namespace

std::string node_binary() {
  // The node CMake found (tests/CMakeLists.txt); "node" when it found none.
  const std::string node = PAYORCH_NODE_PATH;
  return ::access(node.c_str(), X_OK) == 0 ? node : std::string();
}

std::string emulator_missing(const std::string& emulator, const std::string& package) {
  std::string missing;
  if (node_binary().empty()) missing = "node is not on PATH";
  else if (!package.empty() && !std::filesystem::exists(std::string(PAYORCH_SOURCE_DIR) +
                                                        "/tests/emulators/node_modules/" + package + "/package.json"))
    missing = package + " is not installed (run tools/deps)";
  // Under CI a missing service fails the run; it never skips silently.
  const char* ci = std::getenv("CI");
  if (!missing.empty() && ci != nullptr && std::string_view(ci) == "true")
    throw std::runtime_error(missing + " (CI=true: " + emulator + " is required)");
  return missing;
}

std::string adyen_emulator_missing() { return emulator_missing("the Adyen emulator", "@adyen/api-library"); }

std::string sign_with_adyen_library(const std::string& hex_key, const std::string& items_json) {
  TempDir dir("adyen-sign");
  const CommandResult result =
      run_to_completion({node_binary(), emulator_dir + "/sign_notification.js", hex_key, items_json},
                        dir.path() + "/out.log", std::chrono::seconds(20));
  if (!result.status.exited || result.status.code != 0)
    throw std::runtime_error("sign_notification.js " + result.status.describe() + ": " + result.output);
  return result.output;
}

SimProviderConfig adyen_provider(const AdyenEmulator& emulator) {
  return {.name = "adyen",
          .adapter = "adyen",
          .base_url = emulator.base_url(),
          .api_key = adyen_emulator_api_key,
          .timeouts = "{connect: 500ms, request: 1500ms}",
          .contract = "{key_retention: 7d, recovery: replay}",
          .callback = std::string("{secret: \"") + adyen_emulator_hmac_key +
                      "\", tolerance: 5m, retry_horizon: 24h}",
          .options = std::string("{merchant_account: ") + adyen_emulator_merchant + "}"};
}

AdyenEmulator::AdyenEmulator(AdyenEmulatorOptions options)
    : options_(std::move(options)), dir_(make_temp_dir("adyen-emulator")) {
  port_ = options_.port;
  start();
}

void AdyenEmulator::start() {
  const std::string port_file = dir_ + "/port";
  std::filesystem::remove(port_file);
  std::vector<std::string> argv{node_binary(), emulator_dir + "/server.js", "--listen",
                                "127.0.0.1:" + std::to_string(port_), "--port-file", port_file,
                                "--ledger", dir_ + "/ledger.jsonl", "--hmac-key",
                                adyen_emulator_hmac_key, "--api-key", adyen_emulator_api_key,
                                "--received-delay-ms", std::to_string(options_.received_delay_ms)};
  if (!options_.webhook_url.empty()) {
    argv.push_back("--webhook-url");
    argv.push_back(options_.webhook_url);
  }
  process_.spawn(argv, dir_ + "/emulator.log");
  const PortWait wait = wait_for_port_file(process_, port_file, std::chrono::seconds(10));
  if (wait.port == 0)
    throw std::runtime_error("the Adyen emulator did not start; log:\n" + log_tail());
  port_ = wait.port;
}

void AdyenEmulator::restart() {
  process_.kill9();
  start();
}

bool AdyenEmulator::running() { return process_.running(); }

AdyenEmulator::~AdyenEmulator() {
  if (process_.running()) process_.terminate(std::chrono::seconds(5));
  remove_temp_dir(dir_);
}

boost::json::value AdyenEmulator::control(const std::string& method, const std::string& target,
                                          const std::string& body) const {
  const HttpResponse r = http_request(port_, method, target,
                                      {{"Content-Type", "application/json"}}, body);
  if (r.status != 200) throw std::runtime_error("emulator " + target + ": " + r.describe());
  return r.json();
}

void AdyenEmulator::set_webhook_url(const std::string& url) {
  control("POST", "/_emu/webhook_url", boost::json::serialize(boost::json::object{{"url", url}}));
}

void AdyenEmulator::set_fault(const std::string& mode, int count, int delay_ms, const std::string& path) {
  boost::json::object body{{"mode", mode}, {"count", count}, {"delay_ms", delay_ms}};
  if (!path.empty()) body["path"] = path;
  control("POST", "/_emu/faults", boost::json::serialize(body));
}

void AdyenEmulator::clear_fault() {
  control("POST", "/_emu/faults", boost::json::serialize(boost::json::object{{"mode", nullptr}}));
}

void AdyenEmulator::set_switches(bool duplicate_webhooks, bool reorder_webhooks) {
  control("POST", "/_emu/switches",
          boost::json::serialize(boost::json::object{{"duplicate_webhooks", duplicate_webhooks},
                                                     {"reorder_webhooks", reorder_webhooks}}));
}

boost::json::value AdyenEmulator::ledger() const { return control("GET", "/_emu/ledger"); }

std::string AdyenEmulator::log_tail() const { return file_tail(dir_ + "/emulator.log", 4096); }

}  // namespace payorch::test
