#include "util/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace payorch {
namespace {

// Label values escape backslash, double quote and newline (exposition format).
std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_help(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  // The shortest text that reads back as v: a timestamp keeps its fraction of a second.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Sums keep full precision (a rate() over them divides small differences).
std::string format_sum(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string label_pairs(const Labels& labels) {
  std::string out;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first + "=\"" + escape_label(labels[i].second) + "\"";
  }
  return out;
}

std::string braced(const std::string& pairs) { return pairs.empty() ? std::string() : "{" + pairs + "}"; }

std::string header(const std::string& name, const std::string& help, std::string_view type) {
  return "# HELP " + name + " " + escape_help(help) + "\n# TYPE " + name + " " + std::string(type) + "\n";
}

bool name_char(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

}  // namespace

const std::vector<double>& default_latency_buckets() {
  static const std::vector<double> buckets{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                           0.25,  0.5,    1,     2.5,  5,     10};
  return buckets;
}

bool valid_metric_name(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, true)) return false;
  return true;
}

bool valid_label_name(const std::string& name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, false)) return false;
  return true;
}

Metrics::Family& Metrics::family(const std::string& name, Kind kind) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    if (!valid_metric_name(name)) throw std::logic_error("invalid metric name '" + name + "'");
    it = families_.emplace(name, Family{}).first;
    it->second.kind = kind;
    it->second.help = name;
    if (kind == Kind::histogram) it->second.buckets = default_latency_buckets();
  }
  if (it->second.kind != kind) throw std::logic_error("metric '" + name + "' declared with another type");
  return it->second;
}

std::string Metrics::series_key(Family& f, const Labels& labels) {
  std::string key = label_pairs(labels);
  if (f.labels.contains(key)) return key;
  for (const auto& [label, value] : labels)
    if (!valid_label_name(label) || (f.kind == Kind::histogram && label == "le"))
      throw std::logic_error("invalid label name '" + label + "'");
  f.labels.emplace(key, labels);
  return key;
}

void Metrics::declare_counter(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  family(name, Kind::counter).help = help;
}

void Metrics::declare_histogram(const std::string& name, const std::string& help,
                                const std::vector<double>& buckets) {
  if (buckets.empty() || !std::is_sorted(buckets.begin(), buckets.end()) ||
      std::adjacent_find(buckets.begin(), buckets.end()) != buckets.end())
    throw std::logic_error("histogram '" + name + "': buckets must be ascending and distinct");
  std::lock_guard lock(mu_);
  const bool is_new = !families_.contains(name);
  Family& f = family(name, Kind::histogram);
  f.help = help;
  if (is_new) f.buckets = buckets;
}

void Metrics::inc(const std::string& name, const Labels& labels, std::uint64_t by) {
  std::lock_guard lock(mu_);
  Family& f = family(name, Kind::counter);
  f.counters[series_key(f, labels)] += by;
}

void Metrics::observe(const std::string& name, const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  Family& f = family(name, Kind::histogram);
  Histogram& h = f.histograms[series_key(f, labels)];
  if (h.in_bucket.empty()) h.in_bucket.assign(f.buckets.size() + 1, 0);
  const auto bound = std::lower_bound(f.buckets.begin(), f.buckets.end(), value);  // le: value <= bound
  ++h.in_bucket[static_cast<std::size_t>(bound - f.buckets.begin())];
  h.sum += value;
  ++h.count;
}

std::uint64_t Metrics::value(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.counters.find(label_pairs(labels));
  return s == f->second.counters.end() ? 0 : s->second;
}

std::uint64_t Metrics::observations(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.histograms.find(label_pairs(labels));
  return s == f->second.histograms.end() ? 0 : s->second.count;
}

double Metrics::observed_sum(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.histograms.find(label_pairs(labels));
  return s == f->second.histograms.end() ? 0 : s->second.sum;
}

std::uint64_t Metrics::total(const std::string& name, const Labels& match) const {
  std::lock_guard lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  std::uint64_t sum = 0;
  for (const auto& [key, v] : f->second.counters) {
    const Labels& have = f->second.labels.at(key);
    const bool all = std::all_of(match.begin(), match.end(), [&](const auto& m) {
      return std::find(have.begin(), have.end(), m) != have.end();
    });
    if (all) sum += v;
  }
  return sum;
}

void Metrics::add_collector(std::function<std::string()> render) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(render));
}

std::string Metrics::render() const {
  std::string out = render_families();
  std::vector<std::function<std::string()>> collectors;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  for (const auto& collect : collectors) out += collect();
  return out;
}

std::string Metrics::render_families() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    if (f.kind == Kind::counter) {
      out += header(name, f.help, "counter");
      for (const auto& [key, v] : f.counters) out += name + braced(key) + " " + std::to_string(v) + "\n";
      continue;
    }
    out += header(name, f.help, "histogram");
    for (const auto& [key, h] : f.histograms) {
      const std::string prefix = key.empty() ? "" : key + ",";
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i <= f.buckets.size(); ++i) {
        cumulative += h.in_bucket[i];
        const std::string le = i < f.buckets.size() ? format_number(f.buckets[i]) : "+Inf";
        out += name + "_bucket{" + prefix + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
      }
      out += name + "_sum" + braced(key) + " " + format_sum(h.sum) + "\n";
      out += name + "_count" + braced(key) + " " + std::to_string(h.count) + "\n";
    }
  }
  return out;
}

namespace {

std::string render_samples(const std::string& name, const std::string& help, std::string_view type,
                           const std::vector<std::pair<Labels, double>>& samples) {
  std::string out = header(name, help, type);
  for (const auto& [labels, v] : samples) out += name + braced(label_pairs(labels)) + " " + format_number(v) + "\n";
  return out;
}

}  // namespace

std::string render_gauge(const std::string& name, const std::string& help,
                         const std::vector<std::pair<Labels, double>>& samples) {
  return render_samples(name, help, "gauge", samples);
}

std::string render_counter(const std::string& name, const std::string& help,
                           const std::vector<std::pair<Labels, double>>& samples) {
  return render_samples(name, help, "counter", samples);
}

}  // namespace payorch
