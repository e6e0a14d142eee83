#pragma once
// The simulation on PostgreSQL: a server on which each seed gets a database of its own, made
// from a template database migrated once (CREATE DATABASE ... TEMPLATE, a few milliseconds),
// and dropped when the seed is done.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "dst/database.h"
#include "store/postgres/connection.h"

namespace payorch::dst {

class PostgresServer {
public:
  // `url`: a libpq URI (postgresql://user:password@host:port/database[?...]) of a database on
  // the server, whose user may create databases. Creates and migrates the
  // template database; throws store::pg::Error or std::runtime_error when it cannot.
  explicit PostgresServer(const std::string& url);
  // Drops the template database.
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  struct Created {
    std::string name;
    std::string url;
  };
  // A new database copied from the template. Thread-safe.
  Created create_database();
  // DROP DATABASE ... WITH (FORCE). Thread-safe; never throws.
  void drop_database(const std::string& name) noexcept;
  // Whether the template has amcheck (a server without the extension checks no indexes).
  bool has_amcheck() const { return amcheck_; }

private:
  std::string url_of(const std::string& database) const;

  std::string url_;
  std::string prefix_;  // of the databases' names: dst_<pid>_<n>
  std::mutex mu_;
  store::pg::Connection admin_;  // under mu_
  int databases_ = 0;            // under mu_
  bool amcheck_ = false;
};

// The PostgreSQL database of one seed on `server`, dropped when the Database is destroyed.
std::unique_ptr<Database> open_postgres_database(PostgresServer& server);

}  // namespace payorch::dst
