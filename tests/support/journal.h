#pragma once
// An ordered record of what happened, appended from any thread: for tests that check the order
// in which callbacks, hooks and answers ran.
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace payorch::test {

class Journal {
public:
  void add(std::string what) {
    std::lock_guard lock(mu_);
    entries_.push_back(std::move(what));
  }
  std::vector<std::string> get() const {
    std::lock_guard lock(mu_);
    return entries_;
  }

private:
  mutable std::mutex mu_;
  std::vector<std::string> entries_;
};

}  // namespace payorch::test
