#include "providers/sim/sim_adapter.h"

#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <utility>

#include "providers/sim/charge.h"
#include "providers/sim/classify.h"
#include "providers/sim/refund.h"
#include "providers/vendor_call.h"

namespace payorch::providers::sim {

SimAdapter::SimAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
                       net::HttpClient& client)
    : base_url_(provider.base_url),
      secrets_(provider),
      connect_timeout_(provider.timeouts.connect),
      request_timeout_(provider.contract.request_timeout),
      callback_tolerance_(provider.callback.tolerance),
      ex_(std::move(ex)),
      client_(client) {}

net::Request SimAdapter::vendor_request(std::string method, std::string path) const {
  net::Request http;
  http.method = std::move(method);
  http.url = base_url_ + path;
  http.headers = {{"Authorization", "Bearer " + secrets_.api_key()}, {"Accept", "application/json"}};
  http.connect_timeout = connect_timeout_;
  http.timeout = request_timeout_;
  return http;
}

net::Request SimAdapter::idempotent_post(std::string path, const std::string& client_key,
                                         std::string body) const {
  net::Request http = vendor_request("POST", std::move(path));
  http.headers.emplace_back("Idempotency-Key", client_key);
  http.headers.emplace_back("Content-Type", "application/json");
  http.body = std::move(body);
  return http;
}

net::Request SimAdapter::lookup(const std::string& path, const std::string& client_key) const {
  const std::string reference = boost::urls::encode(client_key, boost::urls::unreserved_chars);
  return vendor_request("GET", path + "?reference=" + reference);
}

void SimAdapter::send(net::Request http, Classify classify, ResultHandler done) {
  send_classified(client_, ex_, std::move(http), std::move(classify), std::move(done));
}

void SimAdapter::submit(const ChargeRequest& req, ResultHandler done) {
  send(idempotent_post("/v1/charges", req.client_key, charge_body(req)),
       [req](const net::HttpResult& res) { return classify_submit(res, req); }, std::move(done));
}

void SimAdapter::query(const ChargeRequest& req, ResultHandler done) {
  send(lookup("/v1/charges", req.client_key),
       [req](const net::HttpResult& res) { return classify_query(res, req); }, std::move(done));
}

void SimAdapter::refund(const RefundRequest& req, ResultHandler done) {
  send(idempotent_post("/v1/refunds", req.client_key, refund_body(req)),
       [req](const net::HttpResult& res) { return classify_refund(res, req); }, std::move(done));
}

void SimAdapter::query_refund(const RefundRequest& req, ResultHandler done) {
  send(lookup("/v1/refunds", req.client_key),
       [req](const net::HttpResult& res) { return classify_refund_query(res, req); },
       std::move(done));
}

CallbackCheck SimAdapter::verify_and_parse(const std::map<std::string, std::string>& headers,
                                           const std::string& body,
                                           std::int64_t now_unix_s) const {
  // The secret as it is now: a reload (SIGHUP) may have rotated it.
  return verify_callback(headers, body, now_unix_s,
                         CallbackKey{secrets_.callback_secret(), callback_tolerance_});
}

}  // namespace payorch::providers::sim
