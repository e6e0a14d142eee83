#pragma once
// Counters and histograms for GET /metrics (Prometheus text exposition format 0.0.4). A family
// is declared once with its help text; a series is a family plus label values. Thread-safe;
// labels never carry tenant data (provider names, routes, states, results, reasons only).
//
// Names and label names are checked when a family or series first appears: an invalid one is a
// bug in payorch and throws std::logic_error, so one bad name can never make the whole scrape
// unreadable.
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace payorch {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Upper bounds in seconds for request latencies (+Inf is implicit).
const std::vector<double>& default_latency_buckets();

class Metrics {
public:
  // Declares a counter family (idempotent). Names follow Prometheus rules, ending in _total.
  void declare_counter(const std::string& name, const std::string& help);
  // Declares a histogram family with ascending upper bounds (idempotent; the first declaration's
  // buckets stay).
  void declare_histogram(const std::string& name, const std::string& help,
                         const std::vector<double>& buckets = default_latency_buckets());
  // Adds `by` to the series; declares the family on first use if needed (help = name).
  void inc(const std::string& name, const Labels& labels = {}, std::uint64_t by = 1);
  // Records one observation in a histogram series; declares the family on first use with the
  // default buckets if needed.
  void observe(const std::string& name, const Labels& labels, double value);

  // The current value of a counter (0 for a series never incremented).
  std::uint64_t value(const std::string& name, const Labels& labels = {}) const;
  // A histogram series' observation count and sum (0 when never observed).
  std::uint64_t observations(const std::string& name, const Labels& labels = {}) const;
  double observed_sum(const std::string& name, const Labels& labels = {}) const;
  // Sum of a counter over every series whose labels include all of `match` (e.g. every status
  // of one route).
  std::uint64_t total(const std::string& name, const Labels& match = {}) const;

  // Families another component computes when scraped (a file's size, the watchdog's last
  // probe): `render` returns complete families (render_gauge, ...) and is called by render(),
  // outside the lock, after the families kept here. Register at start-up; whatever `render`
  // refers to must outlive the last scrape.
  void add_collector(std::function<std::string()> render);

  // Every family, # HELP and # TYPE lines first, series sorted; then the collectors' output.
  std::string render() const;

private:
  enum class Kind { counter, histogram };
  struct Histogram {
    std::vector<std::uint64_t> in_bucket;  // per bound, not cumulative; last = above every bound
    double sum = 0;
    std::uint64_t count = 0;
  };
  struct Family {
    Kind kind = Kind::counter;
    std::string help;
    std::vector<double> buckets;
    // Keyed by the rendered label pairs without braces: `a="x",b="y"`.
    std::map<std::string, std::uint64_t> counters;
    std::map<std::string, Histogram> histograms;
    std::map<std::string, Labels> labels;  // the same keys, as given
  };
  std::string render_families() const;
  Family& family(const std::string& name, Kind kind);  // mu_ held
  std::string series_key(Family& f, const Labels& labels);  // mu_ held; checks label names

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  std::vector<std::function<std::string()>> collectors_;
};

// Gauges are computed when scraped; this renders one family of them. An empty `samples` renders
// the family with no series: the way to say "no such thing now" (e.g. the age of the oldest open
// case while none is open), as 0 would be a real value.
std::string render_gauge(const std::string& name, const std::string& help,
                         const std::vector<std::pair<Labels, double>>& samples);
// A counter family another component keeps (name ending in _total), rendered when scraped.
std::string render_counter(const std::string& name, const std::string& help,
                           const std::vector<std::pair<Labels, double>>& samples);

// True for a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) / label name ([a-zA-Z_][a-zA-Z0-9_]*,
// not starting with "__").
bool valid_metric_name(const std::string& name);
bool valid_label_name(const std::string& name);

}  // namespace payorch
