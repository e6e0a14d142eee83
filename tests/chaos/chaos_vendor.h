#pragma once
// The vendor behind payorchd in a chaos run, as chaos_run.cpp acts on it: the round's switches,
// the plan's faults, kill -9 and restart, and calm for the settling phase. One implementation
// per vendor process: payorch-vendor-sim, the Adyen Checkout emulator
// (tests/emulators/adyen/server.js) and the Stripe emulator (tests/emulators/stripe/server.js). A new emulator with a /_emu control API is one more
// class here, one more VendorProfile in chaos_plan.h and one ledger RecordSource.
#include <memory>
#include <string>

#include "chaos/chaos_checker.h"
#include "chaos/chaos_plan.h"

namespace payorch::test {
class AdyenEmulator;
class StripeEmulator;
class VendorSim;
}  // namespace payorch::test

namespace payorch::chaos {

class Vendor {
public:
  virtual ~Vendor() = default;
  virtual std::string name() const = 0;  // "sim", "adyen emulator" (the report's words)
  // The round's switches (duplicate / reordered / held callbacks, lookups). Throws on a
  // control call that fails.
  virtual void apply(const Round& round) = 0;
  // Queues (or, where the vendor holds one fault at a time, sets) a planned fault.
  virtual void add_fault(const PlannedFault& fault) = 0;
  // kill -9, then the vendor again on the same ledger and port.
  virtual void restart() = 0;
  // Faults off, callbacks on, single and in order: the settling phase.
  virtual void calm() = 0;
  virtual bool running() = 0;
};

// payorch-vendor-sim; its ledger is read from its SQLite file (sqlite_records(sim.db_path())).
class SimVendor : public Vendor {
public:
  explicit SimVendor(test::VendorSim& sim) : sim_(sim) {}
  std::string name() const override { return "sim"; }
  void apply(const Round& round) override;
  void add_fault(const PlannedFault& fault) override;
  void restart() override;
  void calm() override;
  bool running() override;

private:
  test::VendorSim& sim_;
};

// The Adyen emulator. It holds one fault mode at a time (POST /_emu/faults replaces it), has
// no lookup to switch off, and holds webhooks back while its webhook URL is "" (they are kept
// and go out, late, once it is set again).
class AdyenEmulatorVendor : public Vendor {
public:
  // `webhook_url`: payorchd's /v1/callbacks/adyen, where webhooks go when callbacks are on.
  AdyenEmulatorVendor(test::AdyenEmulator& emulator, std::string webhook_url)
      : emulator_(emulator), webhook_url_(std::move(webhook_url)) {}
  std::string name() const override { return "adyen emulator"; }
  void apply(const Round& round) override;
  void add_fault(const PlannedFault& fault) override;
  void restart() override;
  void calm() override;
  bool running() override;

private:
  test::AdyenEmulator& emulator_;
  std::string webhook_url_;
};

// The Stripe emulator. It holds one fault mode at a time (POST /_emu/faults replaces it) and
// has no lookup to switch off. Its webhooks are never switched off: with no webhook URL it
// drops an event for good, where Stripe itself retries a webhook for days
// (https://docs.stripe.com/webhooks#retries), and payorch's stripe adapter has no lookup, so a
// payment left in requires_action would never settle. A round's `callbacks_enabled` is
// therefore not applied (duplicated and reordered webhooks are).
class StripeEmulatorVendor : public Vendor {
public:
  explicit StripeEmulatorVendor(test::StripeEmulator& emulator) : emulator_(emulator) {}
  std::string name() const override { return "stripe emulator"; }
  void apply(const Round& round) override;
  void add_fault(const PlannedFault& fault) override;
  void restart() override;
  void calm() override;
  bool running() override;

private:
  test::StripeEmulator& emulator_;
};

// The emulator's ledger (GET /_emu/ledger) as the checker reads a vendor's: at each snapshot,
// loaded into a private in-memory SQLite database with the sim ledger's tables and the columns
// the checker reads (src/vendor_sim/ledger.h):
//   charges  id = pspReference, reference = reference (payorch sends the payment's client_key),
//            amount_minor = amount.value, currency = amount.currency, status from resultCode:
//            Authorised → succeeded, Received / Pending → pending, Refused / Cancelled →
//            declined (decline_code the resultCode), any other → its resultCode lowercased
//            (neither succeeded nor pending); created_at = order in the ledger.
//   refunds  id = pspReference, reference (the refund's client_key), charge_id =
//            paymentPspReference, amount_minor = amount.value, status succeeded when the
//            emulator decided success, else declined with decline_code charge_not_refundable
//            for "Payment not authorised" (the sim's code for a refund sent before its charge
//            succeeded: the checker's early_refunds) or the emulator's reason.
// Throws std::runtime_error when the emulator does not answer.
std::unique_ptr<RecordSource> emulator_ledger_records(const test::AdyenEmulator& emulator);

// The Stripe emulator's ledger (GET /_emu/ledger) the same way, into the same tables
// (PaymentIntent and Refund objects: https://docs.stripe.com/api/payment_intents/object,
// https://docs.stripe.com/api/refunds/object):
//   charges  id = PaymentIntent id, reference = metadata.client_key (payorch's stripe adapter
//            sets it), amount_minor = amount, currency = currency upper-cased (Stripe's is
//            lowercase), status from status: succeeded → succeeded; processing /
//            requires_action / requires_confirmation → pending; requires_payment_method with a
//            last_payment_error, and canceled → declined (decline_code last_payment_error's
//            decline_code, else its code, else the status); any other → its status (neither
//            succeeded nor pending).
//   refunds  id = Refund id, reference = metadata.client_key, charge_id = payment_intent,
//            amount_minor = amount, currency upper-cased, status succeeded / pending as
//            Stripe's, failed / canceled → declined. (A refund the emulator refuses, e.g. of a
//            PaymentIntent not succeeded, answers 400 and leaves no Refund.)
// Throws std::runtime_error when the emulator does not answer.
std::unique_ptr<RecordSource> emulator_ledger_records(const test::StripeEmulator& emulator);

}  // namespace payorch::chaos
