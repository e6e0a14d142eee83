#pragma once
// The control API under /_sim/ (no authentication: the sim is a demo and test vendor; never
// expose it). Runs on the sim's logic executor.
//
//   POST   /_sim/faults     {"mode","count"?=1 (-1 = always),"delay_ms"?,"source"?} queue a fault
//   GET    /_sim/faults     {"faults":[...]}            DELETE /_sim/faults  clears the queue
//   POST   /_sim/config     any of {"lookup_enabled","callbacks_enabled","duplicate_callbacks"
//                           (booleans), "clock_offset_ms" (integer, absolute)}; all or nothing
//   GET    /_sim/config     the current switches
//   GET    /_sim/ledger     {"charges":[...]}  every charge, with source and times
//   GET    /_sim/callbacks  {"callbacks":[...]} the callback queue and its delivery state
// Answers are JSON; a bad body is 400 {"error":{"type":"invalid_request","message":…}}.
#include <string>
#include <string_view>

#include "vendor_sim/dispatcher.h"
#include "vendor_sim/ledger.h"
#include "vendor_sim/listener.h"
#include "vendor_sim/sim_state.h"
#include "vendor_sim/vendor.h"

namespace payorch::vendor_sim {

class Control {
public:
  Control(Vendor& vendor, Ledger& ledger, SimState& state, Dispatcher& dispatcher)
      : vendor_(vendor), ledger_(ledger), state_(state), dispatcher_(dispatcher) {}

  // `path` is the request path (e.g. "/_sim/faults").
  Response handle(beast_http::verb method, std::string_view path, const std::string& body);

private:
  Response faults(beast_http::verb method, const std::string& body);
  Response config(beast_http::verb method, const std::string& body);

  Vendor& vendor_;
  Ledger& ledger_;
  SimState& state_;
  Dispatcher& dispatcher_;
};

}  // namespace payorch::vendor_sim
