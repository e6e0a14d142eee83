#pragma once
// Counters for GET /metrics (Prometheus text exposition format 0.0.4). A family is declared
// once with its help text; a series is a family plus label values. Thread-safe; labels never
// carry tenant data (provider names, results, reasons only).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace payorch {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
public:
  // Declares a counter family (idempotent). Names follow Prometheus rules, ending in _total.
  void declare_counter(const std::string& name, const std::string& help);
  // Adds `by` to the series; declares the family on first use if needed (help = name).
  void inc(const std::string& name, const Labels& labels = {}, std::uint64_t by = 1);
  // The current value (0 for a series never incremented).
  std::uint64_t value(const std::string& name, const Labels& labels = {}) const;
  // Every family, # HELP and # TYPE lines first, series sorted.
  std::string render() const;

private:
  struct Family {
    std::string help;
    std::map<std::string, std::uint64_t> series;  // rendered label set → value
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

// Gauges are computed when scraped; this renders one family of them.
std::string render_gauge(const std::string& name, const std::string& help,
                         const std::vector<std::pair<Labels, double>>& samples);

}  // namespace payorch
