#pragma once
// A small pool of read connections. In WAL mode readers never block the writer and always see
// the last committed transaction.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/clock.h"
#include "store/sqlite.h"

namespace payorch::store {

class ReadPool {
public:
  ReadPool(const std::string& path, std::size_t size, Millis busy_timeout);

  // Runs f(Db&) on a pooled connection; waits for one if all are in use.
  template <class F>
  auto with(F&& f) {
    Lease lease(*this);
    return f(*lease.db);
  }

private:
  struct Lease {
    explicit Lease(ReadPool& p);
    ~Lease();
    ReadPool& pool;
    std::unique_ptr<Db> db;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Db>> free_;
};

}  // namespace payorch::store
