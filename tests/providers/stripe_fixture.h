#pragma once
// Stripe objects as the vendor answers them, for the stripe adapter's tests against fake
// vendors (sim_fixture.h). Members as in Stripe's API reference and its fixtures
// (github.com/stripe/openapi, fixtures3.json); only those the adapter reads and a few it
// ignores.
#include <boost/json/object.hpp>

#include <string_view>

#include "providers/sim_fixture.h"

namespace payorch::test {

// The PaymentIntent Stripe would answer for `req` in `status`.
inline boost::json::object stripe_payment_intent(const providers::ChargeRequest& req,
                                                 std::string_view status) {
  boost::json::object pi{{"id", "pi_3Qx7"},
                         {"object", "payment_intent"},
                         {"amount", req.amount_minor},
                         {"amount_received", status == "succeeded" ? req.amount_minor : 0},
                         {"capture_method", "automatic"},
                         {"currency", "eur"},
                         {"livemode", false},
                         {"last_payment_error", nullptr},
                         {"cancellation_reason", nullptr},
                         {"latest_charge", nullptr},
                         {"metadata", boost::json::object{{"client_key", req.client_key},
                                                          {"payee", req.payee}}},
                         {"payment_method", req.source},
                         {"status", status}};
  if (status == "requires_payment_method")
    pi["last_payment_error"] = boost::json::object{
        {"type", "card_error"}, {"code", "card_declined"}, {"decline_code", "insufficient_funds"}};
  if (status == "canceled") pi["cancellation_reason"] = "abandoned";
  return pi;
}

// A refund of sample_refund() as payorch sends it; "ch_777" stands for the PaymentIntent id.
inline boost::json::object stripe_refund(const providers::RefundRequest& req,
                                         std::string_view status) {
  boost::json::object r{{"id", "re_3Qx9"},
                        {"object", "refund"},
                        {"amount", req.amount_minor},
                        {"charge", "ch_3Qx8"},
                        {"currency", "eur"},
                        {"metadata", boost::json::object{{"client_key", req.client_key}}},
                        {"payment_intent", req.charge_reference},
                        {"reason", nullptr},
                        {"status", status}};
  if (status == "failed") r["failure_reason"] = "expired_or_canceled_card";
  return r;
}

inline boost::json::object stripe_error(std::string_view type, std::string_view code = {},
                                        std::string_view decline_code = {}) {
  boost::json::object e{{"type", type}, {"message", "test"}};
  if (!code.empty()) e["code"] = code;
  if (!decline_code.empty()) e["decline_code"] = decline_code;
  return boost::json::object{{"error", e}};
}

}  // namespace payorch::test
