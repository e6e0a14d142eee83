#pragma once
// Signed `sim` vendor callbacks (docs/contract.md §5) as a vendor would send them to payorchd's
// POST /v1/callbacks/{provider}: bodies built from a payment view, signed with
// `Sim-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "support/http_client.h"

namespace payorch::test {

inline constexpr const char* sim_callback_secret = "sim-callback-secret";

struct SimCallback {
  std::string event_id;                  // the vendor's delivery id
  std::string status = "succeeded";      // "succeeded" | "declined" | "pending"
  std::string reference;                 // our client_key
  std::string charge_id = "ch_test";
  std::int64_t amount_minor = 1000;
  std::string currency = "EUR";
  std::string payee = "merchant-1";
  // A refund's event (docs/refunds.md): `reference` is the refund's client_key, `charge_id`
  // the refund's id (rf_…) and `refunded_charge` the charge it refunds.
  bool refund = false;
  std::string refunded_charge = {};

  // The charge fields of a payment view (client_key, amount, currency, payee).
  static SimCallback for_payment(const boost::json::value& view, std::string event_id,
                                 std::string status = "succeeded");
  // The refund fields of a refund view, refunding `charge_id`.
  static SimCallback for_refund(const boost::json::value& refund_view, std::string charge_id,
                                std::string event_id, std::string status = "succeeded");
  // {"id","type":"charge.<status>","created","data":{charge}}, or "refund.<status>" with the
  // refund object {"id","reference","charge","status","amount_minor","currency","decline_code"}.
  std::string body() const;
};

// "t=<t>,v1=<hex>"
std::string sim_signature(std::string_view secret, std::int64_t t, std::string_view body);

// The current Unix time in seconds.
std::int64_t unix_now_s();

// POSTs `body` to /v1/callbacks/<provider> with a Sim-Signature made with `secret` at time `t`
// (now when absent). `signature` overrides the whole header value; nullopt `secret` sends no
// signature header at all.
HttpResponse post_sim_callback(std::uint16_t port, const std::string& body,
                               std::optional<std::string> secret = std::string(sim_callback_secret),
                               std::optional<std::int64_t> t = std::nullopt,
                               std::string_view provider = "sim");

}  // namespace payorch::test
