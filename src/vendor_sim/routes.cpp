#include "vendor_sim/routes.h"

#include <openssl/crypto.h>

#include <boost/asio/post.hpp>
#include <boost/url/parse.hpp>

#include "vendor_sim/signature.h"

namespace payorch::vendor_sim {
namespace {

using verb = beast_http::verb;

constexpr std::string_view charges_path = "/v1/charges";
constexpr std::string_view refunds_path = "/v1/refunds";

std::string reference_param(const Request& req) {
  const auto target = boost::urls::parse_origin_form(req.target());
  const auto it = target->params().find("reference");
  return it == target->params().end() ? "" : std::string((*it).value);
}

}  // namespace

Routes::Routes(boost::asio::any_io_executor logic, Vendor& vendor, Control& control,
               const std::string& api_key)
    : logic_(std::move(logic)),
      vendor_(vendor),
      control_(control),
      expected_digest_(sha256_hex("Bearer " + api_key)) {}

bool Routes::authorized(std::string_view authorization) const {
  const std::string digest = sha256_hex(authorization);
  return digest.size() == expected_digest_.size() &&
         CRYPTO_memcmp(digest.data(), expected_digest_.data(), digest.size()) == 0;
}

void Routes::handle(Request&& req, Responder done) {
  const auto target = boost::urls::parse_origin_form(req.target());
  if (!target) return done(error_response(400, "invalid_request"));
  const std::string path = target->path();
  if (path.starts_with("/v1/")) return route_v1(std::move(req), path, std::move(done));
  if (path.starts_with("/_sim/")) {
    return boost::asio::post(logic_, [this, method = req.method(), path,
                                      body = std::move(req.body()), done = std::move(done)] {
      done(control_.handle(method, path, body));
    });
  }
  done(error_response(404, "not_found"));
}

void Routes::route_v1(Request&& req, std::string_view path, Responder done) {
  if (!authorized(req[beast_http::field::authorization]))
    return done(error_response(401, "unauthorized"));
  const bool charges = path == charges_path;
  if (charges || path == refunds_path) {
    if (req.method() == verb::post) {
      return boost::asio::post(
          logic_, [this, charges, key = std::string(req["Idempotency-Key"]),
                   body = std::move(req.body()), done = std::move(done)]() mutable {
            if (charges) vendor_.charge(key, body, std::move(done));
            else vendor_.refund(key, body, std::move(done));
          });
    }
    if (req.method() != verb::get) return done(error_response(405, "method_not_allowed"));
    return boost::asio::post(logic_, [this, charges, reference = reference_param(req),
                                      done = std::move(done)] {
      done(charges ? vendor_.lookup(reference) : vendor_.lookup_refunds(reference));
    });
  }
  if (path.starts_with(charges_path) && path[charges_path.size()] == '/') {
    std::string id(path.substr(charges_path.size() + 1));
    if (id.empty() || id.find('/') != std::string::npos)
      return done(error_response(404, "not_found"));
    if (req.method() != verb::get) return done(error_response(405, "method_not_allowed"));
    return boost::asio::post(
        logic_, [this, id = std::move(id), done = std::move(done)] { done(vendor_.get_charge(id)); });
  }
  done(error_response(404, "not_found"));
}

}  // namespace payorch::vendor_sim
