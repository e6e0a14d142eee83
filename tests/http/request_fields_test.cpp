// http/request_fields: one pagination vocabulary for every list (limit + cursor; `after` kept as
// the events feed's alias).
#include <doctest/doctest.h>

#include <boost/url/parse.hpp>

#include <string>

#include "http/request_fields.h"

using namespace payorch;
using namespace payorch::http;

namespace {

boost::urls::params_view params(const std::string& target) {
  static std::string keep;  // the view points into it
  keep = target;
  return boost::urls::parse_origin_form(keep).value().params();
}

std::string codes(const std::vector<FieldError>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : " ") + e.field + ":" + e.code;
  return out;
}

}  // namespace

TEST_CASE("pagination: the events feed takes cursor, as every list does, and after as its alias") {
  const EventsQuery by_cursor = parse_events_query(params("/v1/events?cursor=42&limit=7"));
  CHECK(codes(by_cursor.errors) == "");
  CHECK(by_cursor.after == 42);
  CHECK(by_cursor.limit == 7);
  const EventsQuery by_after = parse_events_query(params("/v1/events?after=42&limit=7"));
  CHECK(codes(by_after.errors) == "");
  CHECK(by_after.after == by_cursor.after);
  CHECK(parse_events_query(params("/v1/events")).after == 0);
  CHECK(codes(parse_events_query(params("/v1/events?cursor=42&after=42")).errors) == "after:conflict");
  CHECK(codes(parse_events_query(params("/v1/events?cursor=x")).errors) == "cursor:invalid_format");
  CHECK(codes(parse_events_query(params("/v1/events?after=-1")).errors) == "after:invalid_format");
}

TEST_CASE("pagination: payments take cursor and limit, and refuse after (an events-only alias)") {
  const PaymentsQuery q = parse_payments_query(params("/v1/payments?cursor=pay_01HF7YAT001MQPR285CVVZR0EN&limit=3&state=UNKNOWN"));
  CHECK(codes(q.errors) == "");
  CHECK(q.page.cursor == "pay_01HF7YAT001MQPR285CVVZR0EN");
  CHECK(q.page.limit == 3);
  CHECK(q.state == PaymentState::unknown);
  CHECK(codes(parse_payments_query(params("/v1/payments?after=pay_01HF7YAT001MQPR285CVVZR0EN")).errors) ==
        "after:unknown_field");
  CHECK(codes(parse_payments_query(params("/v1/payments?limit=0&cursor=rc_1&state=x")).errors) ==
        "limit:out_of_range cursor:invalid_format state:invalid_format");
}

TEST_CASE("query: a parameter given twice is named once, whatever its values or spelling") {
  CHECK(codes(repeated_query_parameters(params("/v1/payments"))) == "");
  CHECK(codes(repeated_query_parameters(params("/v1/payments?state=UNKNOWN&limit=3"))) == "");
  CHECK(codes(repeated_query_parameters(params("/v1/admin/timeline?id=a&id=b"))) == "id:repeated");
  CHECK(codes(repeated_query_parameters(params("/v1/payments?limit=3&limit=3"))) == "limit:repeated");
  CHECK(codes(repeated_query_parameters(params("/x?provider=a&tenant_id=t&provider=b&provider=c&tenant_id=t"))) ==
        "provider:repeated tenant_id:repeated");
  // Keys are compared decoded: %69d is id.
  CHECK(codes(repeated_query_parameters(params("/x?%69d=a&id=b"))) == "id:repeated");
  // Keys are case-sensitive, as every route reads them.
  CHECK(codes(repeated_query_parameters(params("/x?id=a&ID=b"))) == "");
}
