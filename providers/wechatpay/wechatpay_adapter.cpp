#include "providers/wechatpay/wechatpay_adapter.h"

#include <boost/asio/dispatch.hpp>

#include <chrono>
#include <utility>

#include "config/secrets.h"
#include "providers/wechatpay/classify.h"
#include "providers/wechatpay/notification.h"
#include "providers/wechatpay/request.h"
#include "providers/wechatpay/signing.h"

namespace payorch::providers::wechatpay {

struct Settings {
  explicit Settings(config::ProviderSecrets provider_secrets) : secrets(std::move(provider_secrets)) {}
  std::string base_url;     // without a trailing slash
  std::string path_prefix;  // base_url's own path, "" for a bare host: part of the signed URL
  Merchant merchant;
  std::string product;
  // serial_no, private_key, platform_serial, platform_public_key, api_v3_key: read per call,
  // so a reload (SIGHUP) that rotates them applies to the next request and callback.
  config::ProviderSecrets secrets;
  config::Millis callback_tolerance{};
  config::Millis connect_timeout{};
  config::Millis request_timeout{};
};

namespace {

CallbackKeys callback_keys(const Settings& s) {
  const auto keys = s.secrets.adapter_keys();
  return CallbackKeys{keys->platform_serial, keys->platform_public_key, keys->api_v3_key, s.callback_tolerance};
}

SignatureCheck verify_answer(const Settings& s, const net::HttpResult& res) {
  const auto keys = s.secrets.adapter_keys();
  return verify_signature(res.headers, res.body, keys->platform_serial, keys->platform_public_key);
}

std::string path_of(const std::string& base_url) {
  const auto scheme = base_url.find("://");
  const auto slash = base_url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? std::string() : base_url.substr(slash);
}

// The request's signature timestamp: the one reading of the wall clock, at the I/O edge (the
// vendor refuses requests whose timestamp is far from its own clock).
std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A signed request; nullopt when the merchant key cannot sign (then nothing is sent).
std::optional<net::Request> signed_request(const Settings& s, std::string method, const std::string& path,
                                           std::string body) {
  const std::string nonce = random_nonce();
  const auto keys = s.secrets.adapter_keys();
  const auto auth = authorization(s.merchant.mchid, keys->serial_no, keys->private_key, method, s.path_prefix + path,
                                  body, unix_now(), nonce);
  if (!auth) return std::nullopt;
  net::Request http;
  http.method = std::move(method);
  http.url = s.base_url + path;
  http.headers = {{"Authorization", *auth}, {"Accept", "application/json"}, {"User-Agent", "payorch"}};
  if (http.method != "GET") http.headers.emplace_back("Content-Type", "application/json");
  http.body = std::move(body);
  http.connect_timeout = s.connect_timeout;
  http.timeout = s.request_timeout;
  return http;
}

// The answer's signature first: an answer that does not verify proves nothing.
using Read = std::function<VendorResult(const net::HttpResult&)>;
Classify verified_then(std::shared_ptr<const Settings> s, Read read) {
  return [s = std::move(s), read = std::move(read)](const net::HttpResult& res) {
    if (auto r = without_answer(res)) return *r;
    const SignatureCheck check = verify_answer(*s, res);
    if (check != SignatureCheck::ok)
      return outcome_only(VendorOutcome::ambiguous, res.status,
                          "HTTP " + std::to_string(res.status) + " answer refused: " + std::string(to_string(check)));
    return read(res);
  };
}

}  // namespace

WechatpayAdapter::WechatpayAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
                                   net::HttpClient& client)
    : ex_(std::move(ex)), client_(client) {
  const config::AdapterOptions& o = provider.options;
  auto s = std::make_shared<Settings>(config::ProviderSecrets(provider));
  s->base_url = provider.base_url;
  s->path_prefix = path_of(provider.base_url);
  s->merchant = Merchant{o.mchid, o.appid, o.notify_url};
  s->product = o.product;
  s->callback_tolerance = provider.callback.tolerance;
  s->connect_timeout = provider.timeouts.connect;
  s->request_timeout = provider.contract.request_timeout;
  settings_ = std::move(s);
}

void WechatpayAdapter::finish(VendorResult result, ResultHandler done) {
  boost::asio::dispatch(ex_, [done = std::move(done), result = std::move(result)]() mutable {
    done(std::move(result));
  });
}

bool WechatpayAdapter::supports_fence() const { return settings_->product != "codepay"; }

void WechatpayAdapter::submit(const ChargeRequest& req, ResultHandler done) {
  if (!valid_out_trade_no(req.client_key)) {
    VendorResult r = outcome_only(VendorOutcome::declined, 0, "client_key is not a valid out_trade_no; not sent");
    r.decline_code = "invalid_out_trade_no";
    return finish(std::move(r), std::move(done));
  }
  const Settings& s = *settings_;
  auto http = signed_request(s, "POST", order_path(s.product), order_body(s.product, req, s.merchant));
  if (!http) return finish(outcome_only(VendorOutcome::not_sent, 0, "the merchant key cannot sign"), std::move(done));
  send_classified(client_, ex_, std::move(*http),
                  verified_then(settings_, [req, product = s.product](const net::HttpResult& res) {
                    return classify_order(res, req, product);
                  }),
                  std::move(done));
}

void WechatpayAdapter::query(const ChargeRequest& req, ResultHandler done) {
  const Settings& s = *settings_;
  auto http = signed_request(s, "GET", query_path(req.client_key, s.merchant.mchid), "");
  if (!http) return finish(outcome_only(VendorOutcome::not_sent, 0, "the merchant key cannot sign"), std::move(done));
  send_classified(client_, ex_, std::move(*http),
                  verified_then(settings_, [req](const net::HttpResult& res) { return classify_query(res, req); }),
                  std::move(done));
}

void WechatpayAdapter::fence(const ChargeRequest& req, ResultHandler done) {
  const Settings& s = *settings_;
  if (!supports_fence())
    return finish(outcome_only(VendorOutcome::unsupported, 0, "codepay has no fence (reverse refunds a paid order)"),
                  std::move(done));
  auto http = signed_request(s, "POST", close_path(req.client_key), close_body(s.merchant.mchid));
  if (!http) return finish(outcome_only(VendorOutcome::not_sent, 0, "the merchant key cannot sign"), std::move(done));
  send_classified(client_, ex_, std::move(*http),
                  verified_then(settings_, [](const net::HttpResult& res) { return classify_close(res); }),
                  std::move(done));
}

// Two calls: the order's query (its amount.total, which the refund must name), then the
// refund. Until the refund itself is sent nothing can have happened: every failure of the
// first call is not_sent.
void WechatpayAdapter::refund(const RefundRequest& req, ResultHandler done) {
  auto settings = settings_;
  auto lookup = signed_request(*settings, "GET", query_path(req.charge_client_key, settings->merchant.mchid), "");
  if (!lookup)
    return finish(outcome_only(VendorOutcome::not_sent, 0, "the merchant key cannot sign"), std::move(done));
  net::HttpClient& client = client_;
  auto ex = ex_;
  client.request(std::move(*lookup), [settings, req, ex, &client, done = std::move(done)](net::HttpResult res) mutable {
    const ChargeRequest charge{req.charge_client_key, 0, req.currency, "", ""};
    const VendorResult order = verified_then(settings, [&charge](const net::HttpResult& r) {
                                 return classify_query(r, charge);
                               })(res);
    const bool trusted = res.kind == net::HttpResult::response &&
                         verify_answer(*settings, res) == SignatureCheck::ok;
    const std::optional<std::int64_t> total = trusted ? paid_order_total(res) : std::nullopt;
    if (!total) {
      boost::asio::dispatch(ex, [done = std::move(done), status = order.http_status,
                                 detail = "refund not sent: the order's query said: " + order.detail]() mutable {
        done(outcome_only(VendorOutcome::not_sent, status, detail));
      });
      return;
    }
    auto http = signed_request(*settings, "POST", "/v3/refund/domestic/refunds",
                               refund_body(req, *total, settings->merchant.notify_url));
    if (!http) {
      boost::asio::dispatch(ex, [done = std::move(done)]() mutable {
        done(outcome_only(VendorOutcome::not_sent, 0, "the merchant key cannot sign"));
      });
      return;
    }
    send_classified(client, ex, std::move(*http),
                    verified_then(settings, [req](const net::HttpResult& r) { return classify_refund(r, req, false); }),
                    std::move(done));
  });
}

void WechatpayAdapter::query_refund(const RefundRequest& req, ResultHandler done) {
  auto http = signed_request(*settings_, "GET", refund_query_path(req.client_key), "");
  if (!http) return finish(outcome_only(VendorOutcome::not_sent, 0, "the merchant key cannot sign"), std::move(done));
  send_classified(client_, ex_, std::move(*http),
                  verified_then(settings_, [req](const net::HttpResult& res) { return classify_refund(res, req, true); }),
                  std::move(done));
}

CallbackCheck WechatpayAdapter::verify_and_parse(const std::map<std::string, std::string>& headers,
                                                 const std::string& body, std::int64_t now_unix_s) const {
  return verify_notification(headers, body, now_unix_s, callback_keys(*settings_));
}

}  // namespace payorch::providers::wechatpay
