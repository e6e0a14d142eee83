#include "support/vendor_callbacks.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>

#include "core/signature.h"
#include "support/payorch_api.h"

namespace payorch::test {

SimCallback SimCallback::for_payment(const boost::json::value& view, std::string event_id,
                                     std::string status) {
  SimCallback cb;
  cb.event_id = std::move(event_id);
  cb.status = std::move(status);
  cb.reference = json_string(view, "client_key");
  cb.amount_minor = json_int(view, "amount_minor").value_or(0);
  cb.currency = json_string(view, "currency");
  cb.payee = json_string(view, "payee");
  cb.charge_id = "ch_" + cb.reference.substr(cb.reference.size() > 3 ? 3 : 0);
  return cb;
}

SimCallback SimCallback::for_refund(const boost::json::value& refund_view, std::string charge_id,
                                    std::string event_id, std::string status) {
  SimCallback cb;
  cb.refund = true;
  cb.event_id = std::move(event_id);
  cb.status = std::move(status);
  cb.reference = json_string(refund_view, "client_key");
  cb.amount_minor = json_int(refund_view, "amount_minor").value_or(0);
  cb.currency = json_string(refund_view, "currency");
  cb.refunded_charge = std::move(charge_id);
  cb.charge_id = "rf_" + cb.reference.substr(cb.reference.size() > 3 ? 3 : 0);
  return cb;
}

std::string SimCallback::body() const {
  if (refund) {
    boost::json::object object{{"id", charge_id},         {"reference", reference},
                               {"charge", refunded_charge}, {"status", status},
                               {"amount_minor", amount_minor}, {"currency", currency},
                               {"decline_code", nullptr}};
    if (status == "declined") object["decline_code"] = "exceeds_charge";
    return boost::json::serialize(boost::json::object{
        {"id", event_id}, {"type", "refund." + status}, {"created", unix_now_s()}, {"data", std::move(object)}});
  }
  boost::json::object charge{{"id", charge_id},
                             {"reference", reference},
                             {"status", status},
                             {"amount_minor", amount_minor},
                             {"currency", currency},
                             {"payee", payee},
                             {"decline_code", nullptr}};
  if (status == "declined") charge["decline_code"] = "insufficient_funds";
  boost::json::object event{{"id", event_id},
                            {"type", "charge." + status},
                            {"created", unix_now_s()},
                            {"data", std::move(charge)}};
  return boost::json::serialize(event);
}

std::string sim_signature(std::string_view secret, std::int64_t t, std::string_view body) {
  return sign_timestamped(secret, t, body);
}

std::int64_t unix_now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

HttpResponse post_sim_callback(std::uint16_t port, const std::string& body,
                               std::optional<std::string> secret, std::optional<std::int64_t> t,
                               std::string_view provider) {
  Headers headers{{"Content-Type", "application/json"}};
  if (secret) headers.emplace_back("Sim-Signature", sim_signature(*secret, t.value_or(unix_now_s()), body));
  return http_request(port, "POST", "/v1/callbacks/" + std::string(provider), headers, body);
}

}  // namespace payorch::test
