#include "chaos/chaos_vendor.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "support/adyen_emulator.h"
#include "support/sqlite_probe.h"
#include "support/stripe_emulator.h"
#include "support/vendor_sim.h"

namespace payorch::chaos {
namespace {

namespace json = boost::json;

std::string string_at(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// amount {value, currency} of a payment or refund.
std::pair<std::string, std::string> amount_of(const json::object& o) {
  const json::value* amount = o.if_contains("amount");
  if (!amount || !amount->is_object()) return {"", ""};
  const json::value* value = amount->as_object().if_contains("value");
  return {value && value->is_int64() ? std::to_string(value->as_int64()) : "",
          string_at(amount->as_object(), "currency")};
}

std::string charge_status(const std::string& result_code) {
  if (result_code == "Authorised") return "succeeded";
  if (result_code == "Received" || result_code == "Pending") return "pending";
  if (result_code == "Refused" || result_code == "Cancelled") return "declined";
  std::string lower = result_code;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

std::string int_at(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_int64() ? std::to_string(v->as_int64()) : std::string();
}

// An emulator's ledger, read at each snapshot into a private in-memory SQLite database with the
// sim ledger's tables and the columns the checker reads (src/vendor_sim/ledger.h); `load` fills
// them from one GET /_emu/ledger.
class JsonLedger : public RecordSource {
public:
  Snapshot snapshot(const std::vector<std::string>& sqls) const override {
    test::SqliteProbe db(":memory:", test::SqliteProbe::Mode::create);
    db.exec(
        "CREATE TABLE charges (id TEXT PRIMARY KEY, reference TEXT, amount_minor INTEGER, "
        "currency TEXT, status TEXT, decline_code TEXT, created_at INTEGER);"
        "CREATE TABLE refunds (id TEXT PRIMARY KEY, reference TEXT, charge_id TEXT, "
        "amount_minor INTEGER, currency TEXT, status TEXT, decline_code TEXT, created_at INTEGER);");
    load(db);
    Snapshot out;
    for (const std::string& sql : sqls) out.push_back(db.query(sql));
    return out;
  }

protected:
  virtual void load(test::SqliteProbe& db) const = 0;

  static void charge(test::SqliteProbe& db, const std::vector<std::string>& row) {
    db.query("INSERT INTO charges VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", row);
  }
  static void refund(test::SqliteProbe& db, const std::vector<std::string>& row) {
    db.query("INSERT INTO refunds VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", row);
  }
};

class AdyenLedger : public JsonLedger {
public:
  explicit AdyenLedger(const test::AdyenEmulator& emulator) : emulator_(emulator) {}

protected:
  // One GET /_emu/ledger is one consistent snapshot (the emulator answers it between commits).
  void load(test::SqliteProbe& db) const override {
    const json::value ledger = emulator_.ledger();
    std::int64_t order = 0;
    for (const json::value& v : ledger.at("payments").as_array()) {
      const json::object& p = v.as_object();
      const std::string code = string_at(p, "resultCode");
      const std::string status = charge_status(code);
      const auto amount = amount_of(p);
      charge(db, {string_at(p, "pspReference"), string_at(p, "reference"), amount.first, amount.second, status,
                  status == "declined" ? code : "", std::to_string(order++)});
    }
    for (const json::value& v : ledger.at("refunds").as_array()) {
      const json::object& r = v.as_object();
      const json::value* success = r.if_contains("success");
      const bool succeeded = success && success->is_bool() && success->as_bool();
      const std::string reason = string_at(r, "reason");
      const auto amount = amount_of(r);
      refund(db, {string_at(r, "pspReference"), string_at(r, "reference"), string_at(r, "paymentPspReference"),
                  amount.first, amount.second, succeeded ? "succeeded" : "declined",
                  succeeded ? "" : reason == "Payment not authorised" ? "charge_not_refundable" : reason,
                  std::to_string(order++)});
    }
  }

private:
  const test::AdyenEmulator& emulator_;
};

std::string client_key_of(const json::object& o) {
  const json::value* metadata = o.if_contains("metadata");
  return metadata && metadata->is_object() ? string_at(metadata->as_object(), "client_key") : std::string();
}

// PaymentIntent status (https://docs.stripe.com/api/payment_intents/object#payment_intent_object-status)
// as the sim ledger's; the decline code for a declined one, "" otherwise.
std::pair<std::string, std::string> payment_intent_status(const json::object& pi) {
  const std::string status = string_at(pi, "status");
  if (status == "succeeded") return {"succeeded", ""};
  if (status == "processing" || status == "requires_action" || status == "requires_confirmation")
    return {"pending", ""};
  const json::value* error = pi.if_contains("last_payment_error");
  const bool failed = error && error->is_object();
  if (status == "canceled" || (status == "requires_payment_method" && failed)) {
    std::string code = failed ? string_at(error->as_object(), "decline_code") : "";
    if (code.empty() && failed) code = string_at(error->as_object(), "code");
    return {"declined", code.empty() ? status : code};
  }
  return {status, ""};
}

class StripeLedger : public JsonLedger {
public:
  explicit StripeLedger(const test::StripeEmulator& emulator) : emulator_(emulator) {}

protected:
  // One GET /_emu/ledger is one consistent snapshot (server.js answers it between commits).
  void load(test::SqliteProbe& db) const override {
    const json::object ledger = emulator_.ledger();
    std::int64_t order = 0;
    for (const json::value& v : ledger.at("payment_intents").as_array()) {
      const json::object& pi = v.as_object();
      const auto status = payment_intent_status(pi);
      charge(db, {string_at(pi, "id"), client_key_of(pi), int_at(pi, "amount"), upper(string_at(pi, "currency")),
                  status.first, status.second, std::to_string(order++)});
    }
    // Refund status (https://docs.stripe.com/api/refunds/object#refund_object-status).
    for (const json::value& v : ledger.at("refunds").as_array()) {
      const json::object& r = v.as_object();
      const std::string status = string_at(r, "status");
      const bool declined = status == "failed" || status == "canceled";
      refund(db, {string_at(r, "id"), client_key_of(r), string_at(r, "payment_intent"), int_at(r, "amount"),
                  upper(string_at(r, "currency")), declined ? "declined" : status,
                  declined ? string_at(r, "failure_reason") : "", std::to_string(order++)});
    }
  }

private:
  const test::StripeEmulator& emulator_;
};

}  // namespace

void SimVendor::apply(const Round& round) {
  sim_.set_config({{"duplicate_callbacks", round.duplicate_callbacks},
                   {"callbacks_enabled", round.callbacks_enabled},
                   {"lookup_enabled", round.lookup_enabled}});
}

void SimVendor::add_fault(const PlannedFault& fault) { sim_.add_fault(fault.mode, fault.count, fault.delay_ms); }

void SimVendor::restart() { sim_.restart(); }  // kill -9, then the same ledger, port and arguments

void SimVendor::calm() {
  sim_.clear_faults();
  sim_.set_config({{"duplicate_callbacks", false}, {"callbacks_enabled", true}, {"lookup_enabled", true}});
}

bool SimVendor::running() { return sim_.running(); }

void AdyenEmulatorVendor::apply(const Round& round) {
  emulator_.set_switches(round.duplicate_callbacks, round.reorder_callbacks);
  emulator_.set_webhook_url(round.callbacks_enabled ? webhook_url_ : "");
}

void AdyenEmulatorVendor::add_fault(const PlannedFault& fault) {
  emulator_.set_fault(fault.mode, static_cast<int>(fault.count), static_cast<int>(fault.delay_ms.value_or(0)));
}

void AdyenEmulatorVendor::restart() { emulator_.restart(); }

void AdyenEmulatorVendor::calm() {
  emulator_.clear_fault();
  emulator_.set_switches(false, false);
  emulator_.set_webhook_url(webhook_url_);
}

bool AdyenEmulatorVendor::running() { return emulator_.running(); }

std::unique_ptr<RecordSource> emulator_ledger_records(const test::AdyenEmulator& emulator) {
  return std::make_unique<AdyenLedger>(emulator);
}

void StripeEmulatorVendor::apply(const Round& round) {
  emulator_.faults({{"duplicate_webhooks", round.duplicate_callbacks}, {"reorder_webhooks", round.reorder_callbacks}});
}

void StripeEmulatorVendor::add_fault(const PlannedFault& fault) {
  emulator_.faults({{"mode", fault.mode}, {"count", fault.count}, {"delay_ms", fault.delay_ms.value_or(0)}});
}

void StripeEmulatorVendor::restart() { emulator_.restart(); }

void StripeEmulatorVendor::calm() {
  emulator_.faults({{"mode", nullptr}, {"duplicate_webhooks", false}, {"reorder_webhooks", false}});
}

bool StripeEmulatorVendor::running() { return emulator_.running(); }

std::unique_ptr<RecordSource> emulator_ledger_records(const test::StripeEmulator& emulator) {
  return std::make_unique<StripeLedger>(emulator);
}

}  // namespace payorch::chaos
