#pragma once
// In-process "this payment changed" notifications, for answers that wait on a payment
// (`Prefer: wait=N`). Publishers call notify() after the change is committed; a subscriber's
// callback runs at most once, on the publishing thread, and must only post work elsewhere.
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace payorch {

class ChangeNotifier {
public:
  using Callback = std::function<void()>;

  // Returns a token for cancel().
  std::uint64_t subscribe(const std::string& payment_id, Callback cb) {
    std::lock_guard lock(mu_);
    auto token = ++next_;
    subs_.emplace(payment_id, Entry{token, std::move(cb)});
    return token;
  }

  void cancel(const std::string& payment_id, std::uint64_t token) {
    std::lock_guard lock(mu_);
    auto [b, e] = subs_.equal_range(payment_id);
    for (auto it = b; it != e; ++it)
      if (it->second.token == token) {
        subs_.erase(it);
        return;
      }
  }

  void notify(const std::string& payment_id) {
    std::multimap<std::string, Entry> fired;
    {
      std::lock_guard lock(mu_);
      auto [b, e] = subs_.equal_range(payment_id);
      for (auto it = b; it != e; ++it) fired.emplace(it->first, std::move(it->second));
      subs_.erase(b, e);
    }
    for (auto& [id, entry] : fired) entry.cb();
  }

private:
  struct Entry {
    std::uint64_t token;
    Callback cb;
  };
  std::mutex mu_;
  std::uint64_t next_ = 0;
  std::multimap<std::string, Entry> subs_;
};

}  // namespace payorch
