#include "bench/throughput_session.h"

#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "bench/daemon_config.h"
#include "bench/nodes_network.h"
#include "bench/pg_cluster.h"
#include "util/system_clock.h"

namespace payorch::bench {
namespace {

using namespace std::chrono_literals;

constexpr auto start_timeout = 120s;  // a daemon opening a database of 10M rows included
constexpr auto status_poll = 20ms;

// Writes the node's configuration and starts it (its port is read later, so that several
// nodes start at once).
void launch(Session& s, const SuiteOptions& o, DaemonSetup setup, const std::string& name,
            const std::vector<std::string>& prefix = {}) {
  setup.workers = o.workers;
  test::write_file(s.dir + "/" + name + ".yaml", daemon_config(setup));
  s.nodes.push_back(std::make_unique<DaemonProcess>(o.payorchd, s.dir + "/" + name + ".yaml",
                                                    s.dir + "/" + name + ".port",
                                                    s.dir + "/" + name + ".log", prefix));
}

void wait_for_ports(Session& s) {
  for (const auto& node : s.nodes) s.ports.push_back(node->wait_for_port(start_timeout));
}

}  // namespace

std::vector<const DaemonProcess*> Session::daemons() const {
  std::vector<const DaemonProcess*> v;
  for (const auto& node : nodes) v.push_back(node.get());
  return v;
}

Options run_dir_options(const SuiteOptions& o) {
  Options b;
  b.requests = o.requests;
  b.time_cap = o.time_cap;
  b.work_dir = o.work_dir;
  b.keep_dirs = o.keep_dirs;
  return b;
}

std::string loopback_url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

void start(Session& s, const SuiteOptions& o, const std::string& tag, const std::string& vendor_url,
           const std::optional<SeedSpec>& seed, double* seed_seconds) {
  s.dir = make_run_dir(o.work_dir, tag);
  s.db = {s.dir + "/payorch.db"};
  if (seed) {
    std::fprintf(stderr, "payorch-bench-throughput: seeding %lld payments for %s ...\n",
                 static_cast<long long>(seed->count), tag.c_str());
    const SeedReport rep = seed_payments(s.db.sqlite_path, *seed, SystemClock().now_ms());
    s.seeded = rep.rows;
    if (seed_seconds != nullptr) *seed_seconds = rep.seconds;
  }
  launch(s, o, {s.db.sqlite_path, vendor_url}, "payorchd");
  wait_for_ports(s);
}

void start_nodes(Session& s, const SuiteOptions& o, const std::string& tag,
                 const std::string& vendor_url, const std::string& postgres_url, int nodes,
                 NodesNetwork* network, std::uint16_t vendor_port) {
  s.dir = make_run_dir(o.work_dir, tag);
  s.db = {.sqlite_path = {}, .postgres_url = postgres_url};
  if (network != nullptr) s.netns = network->hub();
  for (int i = 1; i <= nodes; ++i) {
    DaemonSetup setup{.db_path = {}, .vendor_url = vendor_url};
    setup.postgres_url = postgres_url;
    setup.pool_size = o.pool_size;
    setup.node_id = "node-" + std::to_string(i);
    std::vector<std::string> prefix;
    if (network != nullptr) {
      const NodesNetwork::Node node = network->node(i, vendor_port);
      setup.postgres_url = with_host_port(postgres_url, node.database);
      setup.vendor_url = node.vendor_url;
      setup.listen_host = node.address;
      prefix = node.prefix;
      s.hosts.push_back(node.address);
    }
    launch(s, o, setup, setup.node_id, prefix);
  }
  wait_for_ports(s);
}

LoadPlan load_plan(const SuiteOptions& o, const Session& s, int concurrency, std::int64_t total,
                   unsigned expected_status) {
  LoadPlan plan;
  plan.ports = s.ports;
  plan.hosts = s.hosts;
  plan.netns = s.netns;
  plan.concurrency = concurrency;
  plan.total = total;
  plan.warmup = warmup_count(total);
  plan.deadline = SteadyClock::now() + o.time_cap;
  plan.expected_status = expected_status;
  return plan;
}

Result intake(const SuiteOptions& o, const Session& s, const std::string& name, int concurrency,
              std::int64_t total, const std::string& prefix) {
  std::fprintf(stderr, "payorch-bench-throughput: %s ...\n", name.c_str());
  Result r;
  r.name = name;
  r.concurrency = concurrency;
  LoadPlan plan = load_plan(o, s, concurrency, total, 201);
  plan.call = [prefix](std::int64_t ticket) { return intake_call(prefix + std::to_string(ticket)); };
  drive_load(plan, s.daemons(), r);
  return r;
}

void wait_all_succeeded(const SuiteOptions& o, const Session& s, std::int64_t expected,
                        SteadyClock::time_point first_post, Result& r) {
  const auto deadline = SteadyClock::now() + o.e2e_cap;
  std::string last;
  for (;;) {
    const auto [status, body] =
        http_get(s.netns, s.hosts.empty() ? "127.0.0.1" : s.hosts.front(), s.ports.at(0), "/status");
    const auto now = SteadyClock::now();
    if (status == 200) {
      const boost::json::value doc = boost::json::parse(body);
      const boost::json::object& payments = doc.at("payments").as_object();
      auto count = [&](const char* state) { return payments.at(state).to_number<std::int64_t>(); };
      if (count("PROCESSING") == 0 && count("UNKNOWN") == 0) {
        if (count("SUCCEEDED") != expected)
          r.failures.push_back("every payment is terminal but " + std::to_string(count("SUCCEEDED")) +
                               " of " + std::to_string(expected) + " SUCCEEDED: " + body);
        r.attempted = r.ok = r.measured = expected;
        const double seconds = std::chrono::duration<double>(now - first_post).count();
        r.per_second = seconds > 0 ? static_cast<double>(expected) / seconds : 0;
        return;
      }
    }
    last = "HTTP " + std::to_string(status) + " " + body;
    if (now >= deadline) {
      r.capped = true;
      r.failures.push_back("not every payment was terminal " + std::to_string(o.e2e_cap.count()) +
                           " s after the first POST; last /status: " + last.substr(0, 400));
      return;
    }
    std::this_thread::sleep_for(status_poll);
  }
}

void live_phase(const SuiteOptions& o, const Session& s, const std::string& prefix,
                CpuMeter& meter, Result& in, Result& e2e, CpuUse& in_cpu, CpuUse& e2e_cpu) {
  meter.start();
  const auto first_post = SteadyClock::now();
  Result r = intake(o, s, in.name, o.concurrency, o.requests, prefix);
  in_cpu = meter.stop();
  in = std::move(r);
  std::fprintf(stderr, "payorch-bench-throughput: waiting for every payment to be SUCCEEDED ...\n");
  if (in.failures.empty()) wait_all_succeeded(o, s, in.ok, first_post, e2e);
  else e2e.failures.push_back("not measured: the intake failed");
  e2e_cpu = meter.stop();
}

std::vector<CpuPart> cpu_parts(const Session& s, const DaemonProcess& vendor, pid_t postmaster) {
  std::vector<pid_t> nodes;
  for (const auto& node : s.nodes) nodes.push_back(node->pid());
  std::vector<CpuPart> parts{{"payorchd", [nodes] { return nodes; }}};
  if (postmaster > 0)
    parts.push_back({"postgres", [postmaster] {
                       std::vector<pid_t> pids = children_of(postmaster);
                       pids.push_back(postmaster);
                       return pids;
                     }});
  parts.push_back({"vendor sim", [pid = vendor.pid()] { return std::vector<pid_t>{pid}; }});
  parts.push_back({"load", [] { return std::vector<pid_t>{::getpid()}; }});
  return parts;
}

void stop(Session& s, std::int64_t created, std::initializer_list<Result*> results) {
  DaemonProcess::Memory largest;
  for (const auto& node : s.nodes) {
    const DaemonProcess::Memory m = node->memory();
    largest.rss_kib = std::max(largest.rss_kib, m.rss_kib);
    largest.hwm_kib = std::max(largest.hwm_kib, m.hwm_kib);
  }
  for (Result* r : results) r->vm_rss_kib = largest.rss_kib, r->vm_hwm_kib = largest.hwm_kib;
  std::vector<DaemonProcess*> daemons;
  for (const auto& node : s.nodes) daemons.push_back(node.get());
  stop_and_check_rows(daemons, s.db, s.seeded, created, **results.begin());
  s.nodes.clear();
}

void finish(const Session& s, const SuiteOptions& o, std::initializer_list<Result*> results) {
  if (s.dir.empty()) return;
  Result* failed = nullptr;
  for (Result* r : results)
    if (!r->failures.empty() && failed == nullptr) failed = r;
  finish_run_dir(s.dir, run_dir_options(o), failed != nullptr ? *failed : **results.begin());
}

std::unique_ptr<DaemonProcess> start_vendor(const SuiteOptions& o, std::string& dir,
                                            std::uint16_t& port) {
  dir = make_run_dir(o.vendor_dir, "vendor");
  auto vendor = std::make_unique<DaemonProcess>(
      std::vector<std::string>{o.vendor_sim, "--listen", "127.0.0.1:0", "--port-file", dir + "/port",
                               "--db", dir + "/sim.db", "--api-key", bench_vendor_api_key,
                               "--callback-url", "none", "--fault",
                               "latency,count=-1,delay_ms=" + std::to_string(o.vendor_latency.count())},
      dir + "/port", dir + "/vendor.log");
  port = vendor->wait_for_port(30s);
  return vendor;
}

}  // namespace payorch::bench
