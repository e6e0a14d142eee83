#pragma once
// A throwaway PostgreSQL cluster for one benchmark run (tools/pg-cluster, docs/postgres.md):
// initdb in a fresh folder under the disk measured, the server on 127.0.0.1 only, watched by
// the benchmark's pid so that it is stopped and its folder removed even if the benchmark dies;
// stopped and removed when destroyed.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace payorch::bench {

// The cluster could not be started (PostgreSQL 15 missing, initdb failed, ...). what() begins
// with postgres_unavailable_marker.
class PostgresUnavailable : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};
inline constexpr const char* postgres_unavailable_marker = "PostgreSQL did not start";

// Where the server runs, when not on this process's own loopback (--netns): tools/pg-cluster
// runs after `prefix` (ip netns exec NS env ...), and `reach`, given the server's port once it
// listens, returns the "HOST:PORT" through which this process connects to it.
struct ClusterPlacement {
  std::vector<std::string> prefix;
  std::function<std::string(std::uint16_t server_port)> reach;
};

// "postgresql://user:pw@HOST:PORT/db?..." with HOST:PORT replaced by `host_port`. Throws
// std::invalid_argument when `url` has no user@host:port/.
std::string with_host_port(const std::string& url, const std::string& host_port);

class BenchCluster {
public:
  // Starts the cluster in a new folder under `parent` with `script` (tools/pg-cluster). With
  // `durable`, the settings the script turns off for throwaway test clusters are turned back
  // on (fsync, full_page_writes, synchronous_commit): every COMMIT waits for its WAL to reach
  // the disk, as SQLite's synchronous=FULL does, so that the two drivers are compared doing
  // the same work. Throws PostgresUnavailable.
  BenchCluster(const std::string& script, const std::string& parent, bool durable,
               ClusterPlacement placement = {});
  ~BenchCluster();
  BenchCluster(const BenchCluster&) = delete;
  BenchCluster& operator=(const BenchCluster&) = delete;

  // CREATE DATABASE `name` ([a-z0-9_] only); returns its URI (this process's).
  std::string create_database(const std::string& name);
  // The port the server listens on, and its password (the URIs hold it too).
  std::uint16_t server_port() const { return server_port_; }
  std::string password() const;
  // The server's main process: its backends are its children.
  pid_t postmaster_pid() const;
  // What COMMIT waits for, as the server reports it: "fsync on, synchronous_commit on, ...".
  std::string durability() const;
  const std::string& dir() const { return dir_; }

private:
  std::string run(const std::vector<std::string>& args) const;
  std::string url(const std::string& database) const;

  std::string script_;
  std::string dir_;
  std::string log_;       // the script's output, beside dir_ (which --remove deletes)
  std::string base_url_;  // of the database payorch, as this process reaches it
  std::uint16_t server_port_ = 0;
  ClusterPlacement placement_;
};

}  // namespace payorch::bench
