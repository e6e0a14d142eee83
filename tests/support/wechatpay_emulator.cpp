#include "support/wechatpay_emulator.h"

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <filesystem>
#include <stdexcept>
#include <vector>

#include "support/adyen_emulator.h"
#include "support/http_client.h"

namespace payorch::test {
namespace {

const std::string emulator_dir = std::string(PAYORCH_SOURCE_DIR) + "/tests/emulators/wechatpay";

}  // namespace

std::string wechatpay_key_path(const std::string& name) { return emulator_dir + "/keys/" + name; }

std::string wechatpay_key(const std::string& name) { return read_file(wechatpay_key_path(name)); }

std::string wechatpay_emulator_missing() {
  return emulator_missing("the WeChat Pay emulator", "wechatpay-axios-plugin");
}

config::Provider wechatpay_test_provider(const std::string& base_url, const std::string& product) {
  config::Provider p;
  p.name = "wechatpay";
  p.adapter = "wechatpay";
  p.base_url = base_url;
  p.timeouts.connect = std::chrono::milliseconds(500);
  p.contract.request_timeout = std::chrono::milliseconds(1500);
  p.callback.tolerance = std::chrono::minutes(5);
  config::AdapterOptions& o = p.options;
  o.mchid = wechatpay_mchid;
  o.appid = wechatpay_appid;
  o.serial_no = wechatpay_merchant_serial;
  o.private_key = wechatpay_key("merchant_private.pem");
  o.platform_serial = wechatpay_platform_serial;
  o.platform_public_key = wechatpay_key("platform_public.pem");
  o.api_v3_key = wechatpay_key("api_v3_key.txt");
  o.product = product;
  o.notify_url = "https://payorch.invalid/callbacks/wechatpay";
  return p;
}

SignedNotification notification_from_library(const std::string& event_type, const std::string& resource_json,
                                             std::int64_t timestamp) {
  TempDir dir("wechatpay-sign");
  std::vector<std::string> argv{node_binary(), emulator_dir + "/sign_notification.js", event_type, resource_json};
  if (timestamp != 0) argv.push_back(std::to_string(timestamp));
  const CommandResult result = run_to_completion(argv, dir.path() + "/out.log", std::chrono::seconds(20));
  if (!result.status.exited || result.status.code != 0)
    throw std::runtime_error("sign_notification.js " + result.status.describe() + ": " + result.output);
  const boost::json::object out = boost::json::parse(result.output).as_object();
  SignedNotification n;
  for (const auto& kv : out.at("headers").as_object())
    n.headers[std::string(kv.key())] = std::string(kv.value().as_string());
  n.body = std::string(out.at("body").as_string());
  return n;
}

WechatpayEmulator::WechatpayEmulator(WechatpayEmulatorOptions options)
    : options_(options), dir_(make_temp_dir("wechatpay-emulator")) {
  const std::string port_file = dir_ + "/port";
  process_.spawn({node_binary(), emulator_dir + "/server.js", "--listen", "127.0.0.1:0", "--port-file", port_file,
                  "--ledger", dir_ + "/ledger.jsonl", "--close-min-delay-ms",
                  std::to_string(options_.close_min_delay_ms), "--refund-delay-ms",
                  std::to_string(options_.refund_delay_ms), "--notify-scale", std::to_string(options_.notify_scale)},
                 dir_ + "/emulator.log");
  const PortWait wait = wait_for_port_file(process_, port_file, std::chrono::seconds(10));
  if (wait.port == 0) throw std::runtime_error("the WeChat Pay emulator did not start; log:\n" + log_tail());
  port_ = wait.port;
}

WechatpayEmulator::~WechatpayEmulator() {
  if (process_.running()) process_.terminate(std::chrono::seconds(5));
  remove_temp_dir(dir_);
}

boost::json::value WechatpayEmulator::control(const std::string& method, const std::string& target,
                                              const std::string& body, unsigned* status) const {
  const HttpResponse r = http_request(port_, method, target, {{"Content-Type", "application/json"}}, body);
  if (status) *status = r.status;
  else if (r.status != 200) throw std::runtime_error("emulator " + target + ": " + r.describe());
  return r.json();
}

unsigned WechatpayEmulator::pay(const std::string& out_trade_no) {
  unsigned status = 0;
  control("POST", "/_emu/pay", boost::json::serialize(boost::json::object{{"out_trade_no", out_trade_no}}), &status);
  return status;
}

void WechatpayEmulator::refund_outcome(const std::string& out_refund_no, const std::string& status) {
  control("POST", "/_emu/refund_outcome",
          boost::json::serialize(boost::json::object{{"out_refund_no", out_refund_no}, {"status", status}}));
}

void WechatpayEmulator::settings(const std::string& json_object) { control("POST", "/_emu/settings", json_object); }

void WechatpayEmulator::set_fault(const std::string& mode, int count, int delay_ms, const std::string& path) {
  boost::json::object body{{"mode", mode}, {"count", count}, {"delay_ms", delay_ms}};
  if (!path.empty()) body["path"] = path;
  control("POST", "/_emu/faults", boost::json::serialize(body));
}

void WechatpayEmulator::set_notify_url(const std::string& url) {
  control("POST", "/_emu/notify_url", boost::json::serialize(boost::json::object{{"url", url}}));
}

boost::json::value WechatpayEmulator::ledger() const { return control("GET", "/_emu/ledger", ""); }

boost::json::value WechatpayEmulator::schema_problems() const { return control("GET", "/_emu/schema_problems", ""); }

std::string WechatpayEmulator::log_tail() const { return file_tail(dir_ + "/emulator.log", 4096); }

}  // namespace payorch::test
