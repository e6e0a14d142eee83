#pragma once
// A throwaway PostgreSQL cluster for one benchmark run (tools/pg-cluster, docs/postgres.md):
// initdb in a fresh folder under the disk measured, the server on 127.0.0.1 only, watched by
// the benchmark's pid so that it is stopped and its folder removed even if the benchmark dies;
// stopped and removed when destroyed.
#include <sys/types.h>

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

class BenchCluster {
public:
  // Starts the cluster in a new folder under `parent` with `script` (tools/pg-cluster). With
  // `durable`, the settings the script turns off for throwaway test clusters are turned back
  // on (fsync, full_page_writes, synchronous_commit): every COMMIT waits for its WAL to reach
  // the disk, as SQLite's synchronous=FULL does, so that the two drivers are compared doing
  // the same work. Throws PostgresUnavailable.
  BenchCluster(const std::string& script, const std::string& parent, bool durable);
  ~BenchCluster();
  BenchCluster(const BenchCluster&) = delete;
  BenchCluster& operator=(const BenchCluster&) = delete;

  // CREATE DATABASE `name` ([a-z0-9_] only); returns its URI.
  std::string create_database(const std::string& name);
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
  std::string base_url_;  // of the database payorch
};

}  // namespace payorch::bench
