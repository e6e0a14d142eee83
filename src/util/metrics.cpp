#include "util/metrics.h"

#include <cmath>
#include <cstdio>

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
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string render_labels(const Labels& labels) {
  if (labels.empty()) return {};
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first + "=\"" + escape_label(labels[i].second) + "\"";
  }
  out += '}';
  return out;
}

}  // namespace


void Metrics::declare_counter(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  families_[name].help = help;
}

void Metrics::inc(const std::string& name, const Labels& labels, std::uint64_t by) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  if (f.help.empty()) f.help = name;
  f.series[render_labels(labels)] += by;
}

std::uint64_t Metrics::value(const std::string& name, const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto f = families_.find(name);
  if (f == families_.end()) return 0;
  auto s = f->second.series.find(render_labels(labels));
  return s == f->second.series.end() ? 0 : s->second;
}

std::string Metrics::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + name + " counter\n";
    for (const auto& [labels, v] : f.series) out += name + labels + " " + std::to_string(v) + "\n";
  }
  return out;
}

std::string render_gauge(const std::string& name, const std::string& help,
                         const std::vector<std::pair<Labels, double>>& samples) {
  std::string out = "# HELP " + name + " " + escape_help(help) + "\n# TYPE " + name + " gauge\n";
  for (const auto& [labels, v] : samples) out += name + render_labels(labels) + " " + format_number(v) + "\n";
  return out;
}

}  // namespace payorch
