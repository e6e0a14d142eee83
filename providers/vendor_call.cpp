#include "providers/vendor_call.h"

#include <boost/asio/dispatch.hpp>

#include <utility>

#include "net/trace_context.h"

namespace payorch::providers {

void send_classified(net::HttpClient& client, const boost::asio::any_io_executor& ex,
                     net::Request http, Classify classify, ResultHandler done) {
  // The call's trace (net/trace_context.h) is the one its answer is handled in: a follow-up
  // call an adapter makes from `done` continues it.
  std::optional<net::OutgoingTrace> trace = net::current_outgoing_trace();
  client.request(std::move(http), [ex, classify = std::move(classify), done = std::move(done),
                                   trace = std::move(trace)](net::HttpResult res) mutable {
    boost::asio::dispatch(ex, [done = std::move(done), result = classify(res),
                               trace = std::move(trace)]() mutable {
      std::optional<net::OutgoingTraceScope> scope;
      if (trace) scope.emplace(*trace);
      done(std::move(result));
    });
  });
}

VendorResult outcome_only(VendorOutcome o, int http_status, std::string detail) {
  VendorResult r;
  r.outcome = o;
  r.http_status = http_status;
  r.detail = std::move(detail);
  return r;
}

std::optional<VendorResult> without_answer(const net::HttpResult& res) {
  if (res.kind == net::HttpResult::not_sent)
    return outcome_only(VendorOutcome::not_sent, 0, "not sent: " + res.error);
  if (res.kind == net::HttpResult::sent_no_answer)
    return outcome_only(VendorOutcome::ambiguous, 0, "no answer: " + res.error);
  return std::nullopt;
}

}  // namespace payorch::providers
