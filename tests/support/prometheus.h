#pragma once
// Reading payorchd's /metrics exposition (Prometheus text format) in tests.
#include <map>
#include <string>
#include <vector>

namespace payorch::test {

// name{labels} -> value, for every sample line of an exposition.
std::map<std::string, double> samples_of(const std::string& text);

// The sum of every sample of `family` (exactly that name, any labels) whose series contains
// all of `parts`.
double sum_of(const std::map<std::string, double>& samples, const std::string& family,
              const std::vector<std::string>& parts = {});

}  // namespace payorch::test
