#pragma once
// HTTP load against a running payorchd: one client thread per keep-alive connection, each
// taking tickets from a shared counter until the plan's request count or deadline is reached.
// Tickets are handed out in order, so "the first `warmup`" are the first requests issued
// across all connections.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/daemon_process.h"
#include "bench/intake_bench.h"

namespace payorch::bench {

// The tenant every benchmark daemon is configured with.
inline constexpr const char* bench_tenant = "bench";
inline constexpr const char* bench_tenant_token = "bench-token-123";

struct HttpCall {
  bool post = true;      // POST with `body`, or GET
  std::string target;
  std::string body;
};

// POST /v1/payments for `operation_id` (1234 EUR from tok_ok, the routing default provider).
HttpCall intake_call(const std::string& operation_id);
// GET /v1/payments/{operation_id}.
HttpCall read_call(const std::string& operation_id);

struct LoadPlan {
  // The daemons' ports: connection i talks to ports[i % ports.size()], so the connections are
  // spread evenly over the nodes.
  std::vector<std::uint16_t> ports;
  // The daemons' addresses, in the order of `ports` (127.0.0.1 when absent), and the network
  // namespace the clients connect from ("" for this process's own; support/net_lab.h).
  std::vector<std::string> hosts = {};
  std::string netns = {};
  int concurrency = 1;
  std::int64_t total = 0;               // requests, warm-up included
  std::int64_t warmup = 0;              // the first tickets, not measured
  SteadyClock::time_point deadline;     // no request starts after it
  unsigned expected_status = 201;       // anything else is counted in r.unexpected
  std::function<HttpCall(std::int64_t ticket)> call;  // called from every client thread
};

// Runs the plan's clients to completion and folds what they saw into `r`: attempted, ok,
// unexpected, the measured samples, capped, and a failure for every unexpected answer or
// broken connection. If the clients still run well after the deadline, the daemons are killed,
// which fails their blocked reads, so this always returns.
void drive_load(const LoadPlan& plan, const std::vector<const DaemonProcess*>& daemons, Result& r);

// SIGTERM to every daemon at once (a clean drain exits 0), then checks that the run added
// exactly `created` payments (the 201s it was answered) to the `rows_before` the database held:
// a 201 promises a durable row. Adds failures to `r`.
void stop_and_check_rows(const std::vector<DaemonProcess*>& daemons, const DatabaseRef& db,
                         std::int64_t rows_before, std::int64_t created, Result& r);

// One GET on a fresh connection, with the tenant's token: status and body. Throws
// std::runtime_error on a transport error.
std::pair<unsigned, std::string> http_get(std::uint16_t port, const std::string& target);
// The same at `host`, from network namespace `netns` ("" for this process's own).
std::pair<unsigned, std::string> http_get(const std::string& netns, const std::string& host,
                                          std::uint16_t port, const std::string& target);

}  // namespace payorch::bench
