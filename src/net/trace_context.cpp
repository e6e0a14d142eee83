#include "net/trace_context.h"

#include <openssl/rand.h>

#include <array>
#include <cstdint>

#include "core/hex.h"

namespace payorch::net {
namespace {

thread_local std::optional<OutgoingTrace> current;

bool is_lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool valid(const OutgoingTrace& t) { return is_trace_hex(t.trace_id, 32) && t.flags.size() == 2 && is_lower_hex(t.flags); }

}  // namespace

bool is_trace_hex(std::string_view id, std::size_t digits) {
  return id.size() == digits && is_lower_hex(id) && id.find_first_not_of('0') != std::string_view::npos;
}

std::optional<TraceParent> parse_traceparent(std::string_view value) {
  // 2 + 1 + 32 + 1 + 16 + 1 + 2
  if (value.size() != 55 || value.substr(0, 3) != "00-" || value[35] != '-' || value[52] != '-')
    return std::nullopt;
  TraceParent tp{std::string(value.substr(3, 32)), std::string(value.substr(36, 16)),
                 std::string(value.substr(53, 2))};
  if (!is_trace_hex(tp.trace_id, 32) || !is_trace_hex(tp.parent_id, 16) || !is_lower_hex(tp.flags))
    return std::nullopt;
  return tp;
}

OutgoingTraceScope::OutgoingTraceScope(const OutgoingTrace& trace) : previous_(std::move(current)) {
  if (valid(trace))
    current = trace;
  else
    current.reset();
}

OutgoingTraceScope::OutgoingTraceScope(const std::optional<std::string>& trace_id,
                                       const std::optional<std::string>& flags)
    : OutgoingTraceScope(OutgoingTrace{trace_id.value_or(""), flags.value_or("")}) {}

OutgoingTraceScope::~OutgoingTraceScope() { current = std::move(previous_); }

std::optional<OutgoingTrace> current_outgoing_trace() { return current; }

std::string outgoing_traceparent(const OutgoingTrace& trace) {
  std::array<unsigned char, 8> span{};
  // A span id only needs to be unique, not secret; all zeros is invalid, so draw again.
  do {
    if (RAND_bytes(span.data(), static_cast<int>(span.size())) != 1) span.fill(0x5a);
  } while (span == std::array<unsigned char, 8>{});
  return "00-" + trace.trace_id + "-" + lower_hex(span) + "-" + trace.flags;
}

}  // namespace payorch::net
