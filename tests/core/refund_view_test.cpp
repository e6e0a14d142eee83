#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>

#include "core/view.h"

namespace payorch {
namespace {

Refund sample_refund() {
  Refund r;
  r.id = "re_01HZY3M5Q8V7K2J9X4N6B1C0DE";
  r.tenant_id = "shop";
  r.operation_id = "rf-1";
  r.payment_id = "pay_01HZY3M5Q8V7K2J9X4N6B1C0DE";
  r.payment_operation_id = "order-1";
  r.provider = "sim";
  r.client_key = "ck_0123456789ABCDEFGHJKMNPQRS";
  r.request_digest = "sha256:00";
  r.amount_minor = 2500;
  r.currency = "EUR";
  r.created_at = 1'700'000'000'000;
  r.updated_at = 1'700'000'001'000;
  return r;
}

}  // namespace

TEST_CASE("refund view: exactly the fields of the contract, nulls for the absent ones") {
  const boost::json::object v = refund_view(sample_refund());
  const char* fields[] = {"id", "operation_id", "payment_id", "payment_operation_id", "state", "amount_minor",
                          "currency", "client_key", "request_digest", "reason", "metadata", "created_at",
                          "updated_at", "attempt_count", "vendor_reference", "failure", "reconciliation"};
  CHECK(v.size() == std::size(fields));
  for (const char* f : fields) CHECK_MESSAGE(v.contains(f), f);
  CHECK(v.at("state") == "DEFERRED");
  CHECK(v.at("amount_minor").as_int64() == 2500);
  CHECK(v.at("payment_operation_id") == "order-1");
  CHECK(v.at("reason").is_null());
  CHECK(v.at("metadata").as_object().empty());
  CHECK(v.at("created_at") == "2023-11-14T22:13:20.000Z");
  CHECK(v.at("vendor_reference").is_null());
  CHECK(v.at("failure").is_null());
  CHECK(v.at("reconciliation").is_null());
  CHECK_FALSE(v.contains("tenant_id"));
}

TEST_CASE("refund view: failure, reconciliation and reason in the payment view's shapes") {
  Refund r = sample_refund();
  r.state = RefundState::failed_final;
  r.reason = "damaged";
  r.metadata = {{"ticket", "T-9"}};
  r.failure_code = std::string(payment_failed_code);
  r.vendor_reference = "rf_1";
  r.reconciliation = CaseSummary{"rc_1", "late_contradiction", "open"};
  const boost::json::object v = refund_view(r);
  CHECK(v.at("state") == "FAILED_FINAL");
  CHECK(v.at("reason") == "damaged");
  CHECK(v.at("metadata").at("ticket") == "T-9");
  CHECK(boost::json::serialize(v.at("failure")) == R"({"code":"payment_failed","message":""})");
  CHECK(boost::json::serialize(v.at("reconciliation")) ==
        R"({"case_id":"rc_1","reason":"late_contradiction","status":"open"})");
  CHECK(v.at("vendor_reference") == "rf_1");
}

TEST_CASE("refund event body: refund.* type and the refund view") {
  const Refund r = sample_refund();
  const boost::json::object e = refund_event_body("evt_1", EventType::created, r.created_at, r);
  CHECK(e.size() == 4);
  CHECK(e.at("id") == "evt_1");
  CHECK(e.at("type") == "refund.created");
  CHECK(e.at("created_at") == "2023-11-14T22:13:20.000Z");
  CHECK(e.at("refund").as_object() == refund_view(r));
  CHECK(refund_event_body("evt_2", EventType::failed, r.updated_at, r).at("type") == "refund.failed");
}

}  // namespace payorch
