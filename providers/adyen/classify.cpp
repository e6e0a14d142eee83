#include "providers/adyen/classify.h"

#include <boost/json/object.hpp>

#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "providers/json_fields.h"
#include "providers/vendor_call.h"

namespace payorch::providers::adyen {
namespace {

namespace json = boost::json;

std::string status_text(int status) { return "HTTP " + std::to_string(status); }

// Amount {value (int64), currency}; nullopt when absent, and `bad` when present but not one.
struct Amount {
  std::int64_t value = 0;
  std::string currency;
};
std::optional<Amount> amount_field(const json::object& o, bool& bad) {
  bad = false;
  const json::value* v = o.if_contains("amount");
  if (!v) return std::nullopt;
  const json::object* a = v->if_object();
  const json::value* value = a ? a->if_contains("value") : nullptr;
  const auto currency = a ? string_member(*a, "currency") : std::nullopt;
  if (!value || !currency) {
    bad = true;
    return std::nullopt;
  }
  if (const auto* i = value->if_int64()) return Amount{*i, *currency};
  if (const auto* u = value->if_uint64(); u && *u <= std::numeric_limits<std::int64_t>::max())
    return Amount{static_cast<std::int64_t>(*u), *currency};
  bad = true;
  return std::nullopt;
}

void add_difference(std::string& out, const std::string& what) {
  out += out.empty() ? "" : "; ";
  out += what;
}

std::string amount_mismatch(const Amount& got, std::int64_t value, const std::string& currency) {
  std::string out;
  if (got.value != value)
    add_difference(out, "amount " + std::to_string(got.value) + " != " + std::to_string(value));
  if (got.currency != currency) add_difference(out, "currency " + got.currency + " != " + currency);
  return out;
}

// The error rows of the table in classify.h, for any answer that is not the endpoint's
// success status.
VendorResult classify_error(const net::HttpResult& res) {
  const int status = res.status;
  if (status == 401 || status == 403)
    return outcome_only(VendorOutcome::auth_refused, status, status_text(status) + ": API key refused");
  const auto body = json_object(res.body);
  const auto code = body ? string_member(*body, "errorCode") : std::nullopt;
  const auto type = body ? string_member(*body, "errorType") : std::nullopt;
  const auto message = body ? string_member(*body, "message") : std::nullopt;
  const std::string said = status_text(status) + (code ? " errorCode " + *code : "") +
                           (message ? " (" + *message + ")" : "");
  // https://docs.adyen.com/development-resources/api-idempotency: a request with a key whose
  // first request is still being processed is refused with 704; the first one's outcome is
  // not known yet.
  if (code && *code == "704")
    return outcome_only(VendorOutcome::ambiguous, status, said + ": in progress under this key");
  // https://docs.adyen.com/development-resources/response-handling: 400 and 422 are requests
  // Adyen could not accept (malformed, or failed validation); nothing was processed.
  if ((status == 400 || status == 422) && code && !code->empty()) {
    VendorResult r = outcome_only(VendorOutcome::declined, status, said);
    r.decline_code = (type ? *type : std::string("error")) + "_" + *code;
    return r;
  }
  // 5xx (Adyen may have acted before failing) and anything unexpected.
  return outcome_only(VendorOutcome::ambiguous, status, said);
}

// PaymentResponse.resultCode → outcome, every value of the schema's enum.
struct ResultCodeRow {
  std::string_view code;
  VendorOutcome outcome;
};
constexpr std::array<ResultCodeRow, 14> result_codes{{
    {"Authorised", VendorOutcome::succeeded},
    {"Refused", VendorOutcome::declined},
    {"Cancelled", VendorOutcome::declined},
    {"Received", VendorOutcome::pending},
    {"Pending", VendorOutcome::pending},
    {"PresentToShopper", VendorOutcome::pending},
    {"RedirectShopper", VendorOutcome::pending},
    {"IdentifyShopper", VendorOutcome::pending},
    {"ChallengeShopper", VendorOutcome::pending},
    {"AuthenticationFinished", VendorOutcome::pending},
    {"AuthenticationNotRequired", VendorOutcome::pending},
    {"PartiallyAuthorised", VendorOutcome::ambiguous},
    {"Error", VendorOutcome::ambiguous},
    {"Success", VendorOutcome::ambiguous},
}};

VendorOutcome outcome_of(std::string_view result_code) {
  for (const ResultCodeRow& row : result_codes)
    if (row.code == result_code) return row.outcome;
  return VendorOutcome::ambiguous;
}

}  // namespace

VendorResult classify_payment(const net::HttpResult& res, const ChargeRequest& sent) {
  if (auto r = without_answer(res)) return *r;
  const int status = res.status;
  if (status != 200) return classify_error(res);
  const auto body = json_object(res.body);
  if (!body) return outcome_only(VendorOutcome::ambiguous, status, "200 with a body that is not a JSON object");
  const auto result_code = string_member(*body, "resultCode");
  if (!result_code) return outcome_only(VendorOutcome::ambiguous, status, "200 without resultCode");
  VendorResult r = outcome_only(outcome_of(*result_code), status, "resultCode " + *result_code);
  r.vendor_reference = string_member(*body, "pspReference");
  if (r.outcome == VendorOutcome::declined) {
    const auto reason = string_member(*body, "refusalReason");
    const auto reason_code = string_member(*body, "refusalReasonCode");
    r.decline_code = reason ? *reason : reason_code ? *reason_code : *result_code;
    if (reason_code) r.detail += " refusalReasonCode " + *reason_code;
  }
  // The answer must be about the payment we sent: a replayed answer for another body, or
  // another reference, proves nothing about ours.
  std::string differences;
  if (const auto reference = string_member(*body, "merchantReference");
      reference && *reference != sent.client_key)
    add_difference(differences, "merchantReference " + *reference + " != " + sent.client_key);
  bool bad_amount = false;
  const auto amount = amount_field(*body, bad_amount);
  if (bad_amount) add_difference(differences, "amount is not {value, currency}");
  if (amount) {
    r.amount_minor = amount->value;
    r.currency = amount->currency;
    const std::string diff = amount_mismatch(*amount, sent.amount_minor, sent.currency);
    if (!diff.empty()) add_difference(differences, diff);
  }
  if (!differences.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.detail += "; answer does not match the request (" + differences + ")";
  }
  return r;
}

namespace {

// The shared check of a modification's 201 {status: "received"} answer.
template <class Check>
VendorResult classify_received(const net::HttpResult& res, std::string_view what, Check check) {
  if (auto r = without_answer(res)) return *r;
  const int status = res.status;
  if (status != 201) return classify_error(res);
  const auto body = json_object(res.body);
  if (!body) return outcome_only(VendorOutcome::ambiguous, status, "201 with a body that is not a JSON object");
  const auto state = string_member(*body, "status");
  const auto psp = string_member(*body, "pspReference");
  if (!state || *state != "received" || !psp)
    return outcome_only(VendorOutcome::ambiguous, status,
                        std::string(what) + ": 201 without status \"received\" and pspReference");
  VendorResult r = outcome_only(VendorOutcome::pending, status, std::string(what) + " received");
  r.vendor_reference = *psp;
  if (const std::string differences = check(*body, r); !differences.empty()) {
    r.outcome = VendorOutcome::ambiguous;
    r.detail += "; answer does not match the request (" + differences + ")";
  }
  return r;
}

void expect_field(const json::object& o, std::string_view key, const std::string& sent,
                  bool required, std::string& differences) {
  const auto got = string_member(o, key);
  if (!got) {
    if (required) add_difference(differences, std::string(key) + " missing");
    return;
  }
  if (*got != sent) add_difference(differences, std::string(key) + " " + *got + " != " + sent);
}

}  // namespace

VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent,
                             const std::string& merchant_account) {
  return classify_received(res, "refund", [&](const json::object& body, VendorResult& r) {
    std::string differences;
    expect_field(body, "paymentPspReference", sent.charge_reference, true, differences);
    expect_field(body, "merchantAccount", merchant_account, true, differences);
    expect_field(body, "reference", sent.client_key, false, differences);
    bool bad_amount = false;
    const auto amount = amount_field(body, bad_amount);
    if (!amount) {
      add_difference(differences, "amount missing or not {value, currency}");
    } else {
      r.amount_minor = amount->value;
      r.currency = amount->currency;
      const std::string diff = amount_mismatch(*amount, sent.amount_minor, sent.currency);
      if (!diff.empty()) add_difference(differences, diff);
    }
    return differences;
  });
}

VendorResult classify_cancel(const net::HttpResult& res, const ChargeRequest& sent,
                             const std::string& merchant_account) {
  return classify_received(res, "cancel", [&](const json::object& body, VendorResult&) {
    std::string differences;
    expect_field(body, "paymentReference", sent.client_key, true, differences);
    expect_field(body, "merchantAccount", merchant_account, true, differences);
    return differences;
  });
}

}  // namespace payorch::providers::adyen
