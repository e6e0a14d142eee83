#include "chaos/chaos_vendor.h"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "support/adyen_emulator.h"
#include "support/sqlite_probe.h"
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

class EmulatorLedger : public RecordSource {
public:
  explicit EmulatorLedger(const test::AdyenEmulator& emulator) : emulator_(emulator) {}

  // One GET /_emu/ledger is one consistent snapshot (the emulator answers it between commits).
  Snapshot snapshot(const std::vector<std::string>& sqls) const override {
    const json::value ledger = emulator_.ledger();
    test::SqliteProbe db(":memory:", test::SqliteProbe::Mode::create);
    db.exec(
        "CREATE TABLE charges (id TEXT PRIMARY KEY, reference TEXT, amount_minor INTEGER, "
        "currency TEXT, status TEXT, decline_code TEXT, created_at INTEGER);"
        "CREATE TABLE refunds (id TEXT PRIMARY KEY, reference TEXT, charge_id TEXT, "
        "amount_minor INTEGER, currency TEXT, status TEXT, decline_code TEXT, created_at INTEGER);");
    std::int64_t order = 0;
    for (const json::value& v : ledger.at("payments").as_array()) {
      const json::object& p = v.as_object();
      const std::string code = string_at(p, "resultCode");
      const std::string status = charge_status(code);
      const auto amount = amount_of(p);
      db.query("INSERT INTO charges VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
               {string_at(p, "pspReference"), string_at(p, "reference"), amount.first, amount.second,
                status, status == "declined" ? code : "", std::to_string(order++)});
    }
    for (const json::value& v : ledger.at("refunds").as_array()) {
      const json::object& r = v.as_object();
      const json::value* success = r.if_contains("success");
      const bool succeeded = success && success->is_bool() && success->as_bool();
      const std::string reason = string_at(r, "reason");
      const auto amount = amount_of(r);
      db.query("INSERT INTO refunds VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
               {string_at(r, "pspReference"), string_at(r, "reference"), string_at(r, "paymentPspReference"),
                amount.first, amount.second, succeeded ? "succeeded" : "declined",
                succeeded ? "" : reason == "Payment not authorised" ? "charge_not_refundable" : reason,
                std::to_string(order++)});
    }
    Snapshot out;
    for (const std::string& sql : sqls) out.push_back(db.query(sql));
    return out;
  }

private:
  const test::AdyenEmulator& emulator_;
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
  return std::make_unique<EmulatorLedger>(emulator);
}

}  // namespace payorch::chaos
