#pragma once
// The JSON shapes tenants see (docs/contract.md §4, §6). Built from stored records only: a replay returns
// the stored result of the intent, never a recomputation.
#include <boost/json/object.hpp>
#include <string>

#include "core/payment.h"
#include "core/refund.h"
#include "core/state_machine.h"

namespace payorch {

// A string member that may be absent: the string, or JSON null.
boost::json::value json_or_null(const std::optional<std::string>& s);

boost::json::object payment_view(const Payment& p);

// The event of an operation row: {"id","type","created_at","payment":<view>} for a payment,
// refund_event_body() for a refund row (as_refund, core/refund.h).
boost::json::object event_body(const std::string& event_id, EventType type, UnixMillis created_at,
                               const Payment& p);

// The refund view of docs/refunds.md: {"id","operation_id","payment_id","payment_operation_id",
// "state","amount_minor","currency","client_key","request_digest","reason","metadata",
// "created_at","updated_at","attempt_count","vendor_reference","failure","reconciliation"};
// "failure" and "reconciliation" have the payment view's shapes.
boost::json::object refund_view(const Refund& r);

// The type an event of `row` is stored and sent under: "payment.<kind>", or "refund.<kind>".
std::string_view event_type(EventType type, const Payment& row);

// {"id","type","created_at","refund":<view>}, type "refund.<kind>" (refund_event_type).
boost::json::object refund_event_body(const std::string& event_id, EventType type, UnixMillis created_at,
                                      const Refund& r);

}  // namespace payorch
