#pragma once
// What a sim vendor answer means (docs/contract.md §3 and §5), as pure functions of the HTTP result and
// what we sent. This table is where "charge at most once" is won or lost: every answer that
// does not prove the vendor's decision is `ambiguous`, and only a request that certainly never
// left is `not_sent`.
#include "net/http_types.h"
#include "providers/adapter.h"

namespace payorch::providers::sim {

// POST /v1/charges:
//   transport not_sent                            → not_sent
//   transport sent_no_answer                      → ambiguous (the vendor may have charged)
//   200 charge succeeded / declined / pending     → that outcome, if the charge matches what
//                                                   was sent; otherwise ambiguous
//   200 with an unparseable charge                → ambiguous
//   400 {"error":{"type":"invalid_request"}}      → declined, decline_code "invalid_request"
//   401 / 403                                     → auth_refused
//   409 idempotency_mismatch                      → key_mismatch
//   409 in_progress, 5xx, anything else           → ambiguous
VendorResult classify_submit(const net::HttpResult& res, const ChargeRequest& sent);

// GET /v1/charges?reference=<client_key>:
//   transport not_sent                            → not_sent
//   200 {"data":[]}                               → not_found
//   200 {"data":[charge]}                         → the charge's status, if it matches
//   404 {"error":{"type":"not_supported"}}        → unsupported
//   everything else (incl. several charges)       → ambiguous
VendorResult classify_query(const net::HttpResult& res, const ChargeRequest& sent);

// POST /v1/refunds and GET /v1/refunds?reference=<client_key> (docs/contract.md §8): the same
// tables, with the refund object in place of the charge; a refund matches when its reference,
// charge, amount_minor and currency are what was sent. A 200 declined carries the vendor's
// decline_code (e.g. "exceeds_charge", "charge_not_refundable").
VendorResult classify_refund(const net::HttpResult& res, const RefundRequest& sent);
VendorResult classify_refund_query(const net::HttpResult& res, const RefundRequest& sent);

}  // namespace payorch::providers::sim
