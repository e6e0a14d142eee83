#include "store/read_pool.h"

namespace payorch::store {

ReadPool::ReadPool(const std::string& path, std::size_t size, Millis busy_timeout) {
  for (std::size_t i = 0; i < size; ++i) {
    auto db = std::make_unique<Db>(path, Db::Mode::read_write);
    sqlite3_busy_timeout(db->handle(), static_cast<int>(busy_timeout.count()));
    db->exec("PRAGMA query_only=1");
    free_.push_back(std::move(db));
  }
}

ReadPool::Lease::Lease(ReadPool& p) : pool(p) {
  std::unique_lock lock(pool.mu_);
  pool.cv_.wait(lock, [&] { return !pool.free_.empty(); });
  db = std::move(pool.free_.back());
  pool.free_.pop_back();
}

ReadPool::Lease::~Lease() {
  {
    std::lock_guard lock(pool.mu_);
    pool.free_.push_back(std::move(db));
  }
  pool.cv_.notify_one();
}

}  // namespace payorch::store
