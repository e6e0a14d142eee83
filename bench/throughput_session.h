#pragma once
// A session of payorch-bench-throughput: a fresh directory and database (seeded first where the
// mode asks), one payorchd on SQLite or several nodes on one PostgreSQL database, the load
// phases against it, its memory, then SIGTERM and the row check. The modes (throughput_runs.cpp,
// nodes_runs.cpp) are built from these steps.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/cpu_meter.h"
#include "bench/daemon_process.h"
#include "bench/http_load.h"
#include "bench/seed.h"
#include "bench/throughput.h"

namespace payorch::bench {

struct Session {
  std::string dir;
  DatabaseRef db;
  std::int64_t seeded = 0;
  std::vector<std::unique_ptr<DaemonProcess>> nodes;  // one payorchd on SQLite
  std::vector<std::uint16_t> ports;                   // the nodes', in the same order
  std::vector<std::string> hosts;                     // their addresses (127.0.0.1 when empty)
  std::string netns;                                  // where the load connects from ("": here)

  std::vector<const DaemonProcess*> daemons() const;
};

// The run-directory options of the suite (work dir, time cap, --keep) for the shared helpers.
Options run_dir_options(const SuiteOptions& o);

std::string loopback_url(std::uint16_t port);

// Makes the session's directory, seeds its SQLite database if asked (returning the seconds it
// took through `seed_seconds`), and starts payorchd on it.
void start(Session& s, const SuiteOptions& o, const std::string& tag, const std::string& vendor_url,
           const std::optional<SeedSpec>& seed = std::nullopt, double* seed_seconds = nullptr);

// Makes the session's directory and starts `nodes` payorchd on the PostgreSQL database at
// `postgres_url`, node ids node-1, node-2, ..., all at once (they migrate under the advisory
// lock, one of them applying the schema).
//
// With `network` (--netns), node i runs in its namespace, listens on its link's address, and
// reaches the database and the vendor (at `vendor_port`) through its delayed links; the load
// connects from the hub.
class NodesNetwork;
void start_nodes(Session& s, const SuiteOptions& o, const std::string& tag,
                 const std::string& vendor_url, const std::string& postgres_url, int nodes,
                 NodesNetwork* network = nullptr, std::uint16_t vendor_port = 0);

// A load plan against every node of the session: its connections spread over them.
LoadPlan load_plan(const SuiteOptions& o, const Session& s, int concurrency, std::int64_t total,
                   unsigned expected_status);

// `total` intakes over `concurrency` connections, operation ids prefix + ticket.
Result intake(const SuiteOptions& o, const Session& s, const std::string& name, int concurrency,
              std::int64_t total, const std::string& prefix);

// Polls GET /status (of the first node) until `expected` payments are SUCCEEDED and none is
// PROCESSING or UNKNOWN, and fills `r` with payments per second since `first_post`.
void wait_all_succeeded(const SuiteOptions& o, const Session& s, std::int64_t expected,
                        SteadyClock::time_point first_post, Result& r);

// The live phase on a started session: `in`, o.requests intakes over o.concurrency connections
// (operation ids prefix + ticket) while the engine charges them; then, unless the intake failed,
// `e2e`, payments per second from the first POST until all are SUCCEEDED. `meter` measures the
// CPU of each part during the intake (`in_cpu`) and until all SUCCEEDED (`e2e_cpu`). The names
// of `in` and `e2e` are kept.
void live_phase(const SuiteOptions& o, const Session& s, const std::string& prefix,
                CpuMeter& meter, Result& in, Result& e2e, CpuUse& in_cpu, CpuUse& e2e_cpu);

// The parts of a live phase, for its CpuMeter: payorchd (every node of the session), the demo
// vendor, this benchmark (its client threads), and PostgreSQL's server processes when
// `postmaster` is set.
std::vector<CpuPart> cpu_parts(const Session& s, const DaemonProcess& vendor, pid_t postmaster = 0);

// Records the nodes' memory in every result of the session (the largest node's), then stops
// them all (SIGTERM, clean drains) and checks that exactly `created` payments (the 201s) were
// added to the seeded ones; failures go to the first result.
void stop(Session& s, std::int64_t created, std::initializer_list<Result*> results);

// Removes the session's directory, or keeps it (and says so in the first failed result) when
// any of its results failed.
void finish(const Session& s, const SuiteOptions& o, std::initializer_list<Result*> results);

// Runs `body` for a session; an exception becomes a failure of `primary`.
template <class Body>
void guarded(Result& primary, Body body) {
  try {
    body();
  } catch (const std::exception& e) {
    primary.failures.push_back(e.what());
  }
}

// The demo vendor for the live modes: a fixed latency on every charge (the `latency` fault,
// forever), no callbacks (the engine records each answer itself), its ledger in a new
// directory under o.vendor_dir, returned through `dir`.
std::unique_ptr<DaemonProcess> start_vendor(const SuiteOptions& o, std::string& dir,
                                            std::uint16_t& port);

}  // namespace payorch::bench
