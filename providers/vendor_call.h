#pragma once
// What every dialect's adapter does around one vendor HTTP call: send it, classify the answer
// (or its absence) on arrival, and hand the result over on the adapter's executor; and the
// results that carry no vendor object.
#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <optional>
#include <string>

#include "net/http_client.h"
#include "providers/adapter.h"

namespace payorch::providers {

// What an answer (or its absence) means; it holds what was sent.
using Classify = std::function<VendorResult(const net::HttpResult&)>;

// Sends `http` with `client`; `classify` runs when the answer arrives (on the client's
// executor) and `done` is called exactly once with its result, on `ex`.
void send_classified(net::HttpClient& client, const boost::asio::any_io_executor& ex,
                     net::Request http, Classify classify, ResultHandler done);

// A result with an outcome and no vendor object (errors, refusals, transport failures).
VendorResult outcome_only(VendorOutcome o, int http_status, std::string detail);

// The transport rows every dialect shares: not_sent → not_sent (the request never left);
// sent_no_answer → ambiguous (the vendor may have acted). nullopt for a complete response.
std::optional<VendorResult> without_answer(const net::HttpResult& res);

}  // namespace payorch::providers
