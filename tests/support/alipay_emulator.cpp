#include "support/alipay_emulator.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "support/adyen_emulator.h"
#include "support/http_client.h"

namespace payorch::test {
namespace {

const std::string emulator_dir = std::string(PAYORCH_SOURCE_DIR) + "/tests/emulators/alipay";

}  // namespace

std::string alipay_key_path(const std::string& name) { return emulator_dir + "/keys/" + name; }

std::string alipay_key(const std::string& name) {
  std::ifstream in(alipay_key_path(name));
  if (!in) throw std::runtime_error("cannot read " + alipay_key_path(name));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string alipay_emulator_missing() { return emulator_missing("the Alipay emulator", "alipay-sdk"); }

std::string sign_with_alipay_sdk(const std::string& params_json) {
  TempDir dir("alipay-sign");
  const CommandResult result =
      run_to_completion({node_binary(), emulator_dir + "/sign_notification.js", params_json},
                        dir.path() + "/out.log", std::chrono::seconds(20));
  if (!result.status.exited || result.status.code != 0)
    throw std::runtime_error("sign_notification.js " + result.status.describe() + ": " + result.output);
  return result.output;
}

AlipayEmulator::AlipayEmulator(AlipayEmulatorOptions options)
    : options_(options), dir_(make_temp_dir("alipay-emulator")) {
  const std::string port_file = dir_ + "/port";
  process_.spawn({node_binary(), emulator_dir + "/server.js", "--listen", "127.0.0.1:0", "--port-file",
                  port_file, "--app-id", alipay_emulator_app_id, "--app-public-key",
                  alipay_key_path("app_public.pem"), "--alipay-private-key",
                  alipay_key_path("alipay_private.pem"), "--min-close-delay-ms",
                  std::to_string(options_.min_close_delay_ms)},
                 dir_ + "/emulator.log");
  const PortWait wait = wait_for_port_file(process_, port_file, std::chrono::seconds(10));
  if (wait.port == 0) throw std::runtime_error("the Alipay emulator did not start; log:\n" + log_tail());
  port_ = wait.port;
}

AlipayEmulator::~AlipayEmulator() {
  if (process_.running()) process_.terminate(std::chrono::seconds(5));
  remove_temp_dir(dir_);
}

boost::json::value AlipayEmulator::control(const std::string& method, const std::string& target,
                                           const std::string& body, int* status) const {
  const HttpResponse r = http_request(port_, method, target, {{"Content-Type", "application/json"}}, body);
  if (status != nullptr) {
    *status = r.status;
    return nullptr;
  }
  if (r.status != 200) throw std::runtime_error("emulator " + target + ": " + r.describe());
  return r.json();
}

int AlipayEmulator::pay(const std::string& out_trade_no) const {
  int status = 0;
  control("POST", "/_emu/pay", boost::json::serialize(boost::json::object{{"out_trade_no", out_trade_no}}), &status);
  return status;
}

int AlipayEmulator::scan(const std::string& out_trade_no) const {
  int status = 0;
  control("POST", "/_emu/scan", boost::json::serialize(boost::json::object{{"out_trade_no", out_trade_no}}), &status);
  return status;
}

void AlipayEmulator::set_fault(const std::string& mode, int count, int delay_ms, const std::string& method) {
  boost::json::object body{{"mode", mode}, {"count", count}, {"delay_ms", delay_ms}};
  if (!method.empty()) body["method"] = method;
  control("POST", "/_emu/faults", boost::json::serialize(body));
}

void AlipayEmulator::clear_fault() {
  control("POST", "/_emu/faults", boost::json::serialize(boost::json::object{{"mode", nullptr}}));
}

void AlipayEmulator::set_notify_url(const std::string& url) {
  control("POST", "/_emu/notify_url", boost::json::serialize(boost::json::object{{"url", url}}));
}

void AlipayEmulator::set_notifications(bool duplicate, bool reorder, double retry_scale) {
  control("POST", "/_emu/switches",
          boost::json::serialize(boost::json::object{
              {"duplicate", duplicate}, {"reorder", reorder}, {"retry_scale", retry_scale}}));
}

void AlipayEmulator::set_min_close_delay(int ms) {
  control("POST", "/_emu/min_close_delay", boost::json::serialize(boost::json::object{{"ms", ms}}));
}

boost::json::value AlipayEmulator::ledger() const { return control("GET", "/_emu/ledger", ""); }

std::string AlipayEmulator::log_tail() const { return file_tail(dir_ + "/emulator.log", 4096); }

}  // namespace payorch::test
