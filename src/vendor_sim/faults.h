#pragma once
// Fault injection for POST /v1/charges and POST /v1/refunds. A fault is queued (control API or
// --fault) and consumed by the next requests that match it; it changes what happens around the
// commit, never the charge or refund itself. Pure data: the timers live in vendor.cpp.
#include <boost/json/value.hpp>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace payorch::vendor_sim {

enum class FaultMode {
  // Answer 500 at once; nothing is looked at or stored.
  fail_before_commit,
  // Execute (store the charge, queue its callback), then answer 502 instead of the charge.
  commit_then_5xx,
  // Execute, then hold the answer for delay_ms and close the connection without answering.
  commit_then_hang,
  // Answer 504 at once; execute only after delay_ms (the key counts as executing meanwhile,
  // so a lookup says "not found" and a same-key request gets 409 in_progress).
  delayed_commit,
  // Wait delay_ms with the key executing (a same-key request gets 409 in_progress), then
  // execute and answer normally.
  latency,
};

std::string_view to_string(FaultMode mode);

// The idempotent POST a request is: what a fault's `operation` filter names.
enum class Operation { charge, refund };
std::string_view to_string(Operation op);
std::optional<Operation> parse_operation(std::string_view text);
std::optional<FaultMode> parse_fault_mode(std::string_view text);

// delay_ms when a fault does not name one: long enough to outlast a client's timeout for a
// hang, short enough for a test otherwise.
std::int64_t default_delay_ms(FaultMode mode);

struct Fault {
  FaultMode mode = FaultMode::fail_before_commit;
  std::int64_t count = 1;                // requests left; -1 = every request, forever
  std::int64_t delay_ms = 0;
  std::optional<std::string> source;     // only charges with this source; nullopt = any request
  std::optional<Operation> operation;    // only this operation; nullopt = charges and refunds
};

// {"mode","count"?,"delay_ms"?,"source"?,"operation"?}; an unknown member or a bad value is an
// error, with a one-line reason in `error`.
std::optional<Fault> parse_fault_json(const boost::json::value& v, std::string& error);

// The --fault flag: "MODE[,count=N][,delay_ms=M][,source=TOKEN][,operation=charge|refund]".
std::optional<Fault> parse_fault_spec(std::string_view spec, std::string& error);

boost::json::object to_json(const Fault& fault);

// First-in first-out: a request takes the oldest fault whose filters match it. A refund has no
// source, so a fault with a source filter is for charges only. Not thread-safe (the sim's
// logic runs on one thread).
class FaultQueue {
public:
  void push(Fault fault);
  void clear() { faults_.clear(); }
  // The fault for a request of `op` (with this source, for a charge), if any; one use is
  // consumed.
  std::optional<Fault> take(std::optional<std::string_view> source, Operation op = Operation::charge);
  boost::json::array to_json() const;
  std::size_t size() const { return faults_.size(); }

private:
  std::deque<Fault> faults_;
};

}  // namespace payorch::vendor_sim
