#pragma once
// W3C Trace Context (https://www.w3.org/TR/trace-context/) for vendor calls: a request that
// arrived with a valid `traceparent` keeps its trace id (and flags) with the payment it created,
// and every vendor call made for that payment later carries
// `traceparent: 00-<trace-id>-<a new 16-hex span id>-<flags>`, so that a vendor's logs can be
// joined to the caller's trace.
//
// The engine names the trace of the call it is about to make with an OutgoingTraceScope on its
// thread; HttpClient::request adds the header for a request started inside the scope. A
// request an adapter sends later, from a callback of an earlier one, carries it when the
// callback runs inside the scope too (providers/vendor_call.cpp restores it), else not.
#include <optional>
#include <string>
#include <string_view>

namespace payorch::net {

inline constexpr std::string_view traceparent_header = "traceparent";

struct TraceParent {
  std::string trace_id;   // 32 lowercase hex digits, not all zero
  std::string parent_id;  // 16 lowercase hex digits, not all zero
  std::string flags;      // 2 lowercase hex digits (01: sampled)
};

// A traceparent header value of version 00: "00-<trace-id>-<parent-id>-<flags>", lowercase hex,
// neither id all zeros. nullopt for anything else (another version, upper case, extra fields):
// such a header is ignored, and no trace is invented for the request.
std::optional<TraceParent> parse_traceparent(std::string_view value);

// Whether `id` is `digits` lowercase hex digits, not all zero.
bool is_trace_hex(std::string_view id, std::size_t digits);

// The trace a vendor call belongs to.
struct OutgoingTrace {
  std::string trace_id;
  std::string flags;
};

// Makes `trace` the calling thread's outgoing trace until destroyed (the previous one is
// restored). A trace that is not valid (no trace id, bad flags) names none.
class OutgoingTraceScope {
public:
  explicit OutgoingTraceScope(const OutgoingTrace& trace);
  explicit OutgoingTraceScope(const std::optional<std::string>& trace_id,
                              const std::optional<std::string>& flags);
  ~OutgoingTraceScope();
  OutgoingTraceScope(const OutgoingTraceScope&) = delete;
  OutgoingTraceScope& operator=(const OutgoingTraceScope&) = delete;

private:
  std::optional<OutgoingTrace> previous_;
};

// The calling thread's outgoing trace, if any.
std::optional<OutgoingTrace> current_outgoing_trace();

// The header value for a new call within `trace`: "00-<trace_id>-<span id>-<flags>", with a
// fresh random span id.
std::string outgoing_traceparent(const OutgoingTrace& trace);

}  // namespace payorch::net
