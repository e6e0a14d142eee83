#pragma once
// A real database file for store-level tests: a fresh temp dir with a migrated payorch database
// and one read-write connection, removed at the end; and the intake request the store tests
// make payments with.
#include <cstdint>
#include <memory>
#include <string>

#include "core/clock.h"
#include "store/intake.h"
#include "store/sqlite.h"

namespace payorch::test {

class TempDatabase {
public:
  // mkdtemp("/tmp/payorch-<name>-XXXXXX"), then the schema migrated at `now`.
  TempDatabase(const std::string& name, UnixMillis now);
  ~TempDatabase();
  TempDatabase(const TempDatabase&) = delete;
  TempDatabase& operator=(const TempDatabase&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

  std::unique_ptr<store::Db> db;  // read-write, busy timeout 2 s

private:
  std::string dir_;
  std::string path_;
};

// An acme payment of 10.00 EUR to merchant-1 from tok_ok through sim, with its digest.
store::IntakeRequest intake_request(const std::string& operation_id, std::int64_t amount_minor = 1000,
                                    const std::string& currency = "EUR");

}  // namespace payorch::test
