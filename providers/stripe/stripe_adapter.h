#pragma once
// The adapter for Stripe (docs/contract.md §9): PaymentIntents created and confirmed in one
// call, form-encoded, with the client_key as Idempotency-Key and as metadata[client_key];
// refunds by POST /v1/refunds the same way; webhooks signed with Stripe-Signature.
//
// No query: the only lookup by our key is the Search API (metadata['client_key']:'…'), which
// Stripe documents as eventually consistent and unfit for read-after-write ("Don't use search
// in read-after-write flows where strict consistency is necessary",
// https://docs.stripe.com/search#data-freshness). A "not found" from it proves nothing, so the
// contract is recovery `replay` (re-send with the same key within its 24 h,
// https://docs.stripe.com/api/idempotent_requests) and not_found_final_after `never`.
//
// No fence: cancelling a PaymentIntent (POST /v1/payment_intents/:id/cancel) needs the pi_ id,
// which payorch lacks exactly when it would fence (no answer came), and a replay of the
// create under the same key already returns the first outcome instead of charging again.
#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <string>

#include "config/config.h"
#include "config/secrets.h"
#include "net/http_client.h"
#include "providers/adapter.h"
#include "providers/stripe/callback.h"
#include "providers/stripe/form.h"
#include "providers/vendor_call.h"

namespace payorch::providers::stripe {

// The form body of POST /v1/payment_intents for `req`
// (https://docs.stripe.com/api/payment_intents/create): amount, currency (lower-case),
// payment_method = the intent's source, confirm=true, and
// automatic_payment_methods[enabled]=true with [allow_redirects]=never, so that a server-side
// confirm needs no return_url (Stripe refuses confirm=true without a return_url when
// redirect-based methods may be offered); metadata[client_key] and metadata[payee].
FormFields payment_intent_fields(const ChargeRequest& req);

// The form body of POST /v1/refunds (https://docs.stripe.com/api/refunds/create):
// payment_intent = the charge's vendor reference, amount, metadata[client_key].
FormFields refund_fields(const RefundRequest& req);

class StripeAdapter final : public Adapter {
public:
  // `client` must outlive the adapter. Results are delivered on `ex`.
  StripeAdapter(const config::Provider& provider, boost::asio::any_io_executor ex,
                net::HttpClient& client);

  void submit(const ChargeRequest& req, ResultHandler done) override;
  void query(const ChargeRequest& req, ResultHandler done) override;
  bool supports_query() const override { return false; }
  bool supports_refunds() const override { return true; }
  void refund(const RefundRequest& req, ResultHandler done) override;
  void query_refund(const RefundRequest& req, ResultHandler done) override;
  CallbackCheck verify_and_parse(const std::map<std::string, std::string>& headers,
                                 const std::string& body, std::int64_t now_unix_s) const override;

private:
  // A form POST of `fields` to `path` with `client_key` as the Idempotency-Key.
  net::Request idempotent_post(std::string path, const std::string& client_key,
                               const FormFields& fields) const;
  void send(net::Request http, Classify classify, ResultHandler done);

  const std::string base_url_;  // without a trailing slash
  const config::ProviderSecrets secrets_;  // api key and callback secret, as they are now
  const config::Millis connect_timeout_;
  const config::Millis request_timeout_;
  const config::Millis callback_tolerance_;
  const boost::asio::any_io_executor ex_;
  net::HttpClient& client_;
};

}  // namespace payorch::providers::stripe
