#include "support/prometheus.h"

#include <sstream>

namespace payorch::test {

std::map<std::string, double> samples_of(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const std::string value = line.substr(space + 1);
    out[line.substr(0, space)] = value == "+Inf" ? 1e300 : std::stod(value);
  }
  return out;
}

double sum_of(const std::map<std::string, double>& samples, const std::string& family,
              const std::vector<std::string>& parts) {
  double sum = 0;
  for (const auto& [series, v] : samples) {
    if (!(series == family || series.starts_with(family + "{"))) continue;
    bool all = true;
    for (const auto& p : parts) all = all && series.find(p) != std::string::npos;
    if (all) sum += v;
  }
  return sum;
}

}  // namespace payorch::test
