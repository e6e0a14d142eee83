#pragma once
// The charge and refund endpoints' behaviour (docs/contract.md §5 and §8): the idempotency
// contract, "in progress" while a key is executing, and the injected faults around the commit,
// one flow for both. Every method runs on the sim's logic executor (one thread); delays are
// asio timers on it, never sleeps.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/array.hpp>

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "vendor_sim/faults.h"
#include "vendor_sim/ledger.h"
#include "vendor_sim/listener.h"
#include "vendor_sim/sim_state.h"

namespace payorch::vendor_sim {

// The protocol's error answer: `status` with {"error":{"type":type}}.
Response error_response(unsigned status, std::string_view type);

class Vendor {
public:
  // `on_callback_queued` runs (on the logic thread) after a commit that queued a callback.
  Vendor(boost::asio::any_io_executor executor, Ledger& ledger, SimState& state,
         Millis key_retention, Millis pending_delay, std::function<void()> on_callback_queued);

  // POST /v1/charges, after authentication. Answers through `done` exactly once, or (for
  // commit_then_hang) drops it so that the connection closes without an answer.
  void charge(const std::string& idempotency_key, const std::string& body, Responder done);
  // POST /v1/refunds, after authentication: as charge(). A refund of a charge the ledger does
  // not hold is 404 not_found, one in another currency than its charge 400 invalid_request;
  // neither stores anything.
  void refund(const std::string& idempotency_key, const std::string& body, Responder done);
  // GET /v1/charges?reference=: 200 {"data":[...]} (oldest first; [] = not found), or 404
  // not_supported while lookup is disabled.
  Response lookup(const std::string& reference);
  // GET /v1/refunds?reference=: the same for refunds.
  Response lookup_refunds(const std::string& reference);
  // GET /v1/charges/{id}: 200 charge or 404 not_found (works with lookup disabled: it needs an
  // id, which only an answer gives).
  Response get_charge(const std::string& id);

  FaultQueue& faults() { return faults_; }
  // Cancels every delay: a held hang closes its connection, a latency request answers 503
  // shutting_down without executing, a delayed commit never commits (as if the sim crashed).
  void shutdown();

private:
  // The shared flow of a valid POST: shutdown, in_progress, the fault, then execute().
  template <typename Params>
  void perform(const Params& params, Responder done);
  // Runs the ledger decision and logs it; the response is the protocol's answer to it.
  template <typename Params>
  Response execute(const Params& params, std::string_view fault_label);
  Response lookup_json(const std::string& reference,
                       const std::function<boost::json::array()>& find);
  void after(std::int64_t delay_ms, std::function<void(bool cancelled)> fn);

  boost::asio::any_io_executor executor_;
  Ledger& ledger_;
  SimState& state_;
  Millis key_retention_;
  Millis pending_delay_;
  std::function<void()> on_callback_queued_;
  FaultQueue faults_;
  // "charge:<key>" / "refund:<key>": keys whose request has not committed (or failed) yet
  std::set<std::string> executing_;
  std::set<std::shared_ptr<boost::asio::steady_timer>> timers_;
  bool stopping_ = false;
};

}  // namespace payorch::vendor_sim
