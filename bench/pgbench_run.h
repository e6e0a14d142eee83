#pragma once
// The pgbench baseline of the nodes mode: PostgreSQL's own load generator (pgbench, shipped
// with postgresql-15) on the benchmark's cluster, a custom script of one INSERT of a
// payment-sized row per transaction into a table shaped like payments' hot columns (its key,
// its two unique keys, a due index), at N clients for a fixed time, durable as the cluster is.
// What the server itself reaches at one row per commit with many clients and no payorch
// around it: the nodes' intake is printed as a ratio of it.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/intake_bench.h"

namespace payorch::bench {

struct PgbenchSpec {
  std::string program;              // pgbench
  std::vector<std::string> prefix;  // runs it in a namespace (ip netns exec ...) when set
  std::string admin_url;            // this process's URI of the database, to make the table
  std::string host;                 // where pgbench connects (from its namespace)
  std::uint16_t port = 0;
  std::string password;
  std::string database;
  int clients = 32;
  std::chrono::seconds duration{10};
  std::string dir;                  // the script, the password file and pgbench's output
};

// Makes the table, runs pgbench, and returns its transactions per second as `per_second`
// (measured: the transactions it processed; no latency percentiles). A pgbench that fails, or
// is not installed, is a failure of the result.
Result run_pgbench(const PgbenchSpec& spec);

// pgbench of PostgreSQL 15 (its Debian folder), else the one on PATH, else "".
std::string find_pgbench();

}  // namespace payorch::bench
