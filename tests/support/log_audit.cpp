#include "support/log_audit.h"

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "support/daemon.h"
#include "support/vendor_callbacks.h"
#include "support/vendor_sim.h"

namespace payorch::test::log_audit {
namespace {

constexpr std::size_t min_secret_size = 8;

struct Registry {
  std::mutex mutex;
  std::vector<std::pair<std::string, std::string>> secrets;  // secret, what
  std::vector<Finding> findings;

  Registry() {
    secrets = {
        {admin_token, "the admin bearer token (daemon.h)"},
        {acme_token, "acme's bearer token (daemon.h)"},
        {globex_token, "globex's bearer token (daemon.h)"},
        {vendor_sim_api_key, "the sim provider's API key (vendor_sim.h, DaemonConfig)"},
        {sim_callback_secret, "the sim provider's callback secret (vendor_callbacks.h)"},
        {"acme-webhook-secret", "acme's webhook secret (webhook and callback tests)"},
    };
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string read_whole(const std::filesystem::path& path) {
  std::string out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

}  // namespace

void register_secret(std::string_view secret, std::string_view what) {
  if (secret.size() < min_secret_size)
    throw std::invalid_argument("log_audit: a secret shorter than 8 characters: " +
                                std::string(what));
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& [known, _] : r.secrets)
    if (known == secret) return;
  r.secrets.emplace_back(secret, what);
}

std::vector<Finding> find_secrets(std::string_view text, std::string_view file_name) {
  std::vector<std::pair<std::string, std::string>> secrets;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    secrets = r.secrets;
  }
  std::vector<Finding> out;
  std::size_t line = 1;
  for (std::size_t start = 0; start < text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view one = text.substr(start, end - start);
    for (const auto& [secret, what] : secrets)
      if (one.find(secret) != std::string_view::npos)
        out.push_back(Finding{std::string(file_name), what, line});
    start = end + 1;
  }
  return out;
}

std::vector<Finding> audit_logs(const std::string& dir) {
  std::vector<Finding> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".log") continue;
    std::vector<Finding> in_file = find_secrets(read_whole(entry.path()), entry.path().string());
    found.insert(found.end(), in_file.begin(), in_file.end());
  }
  if (found.empty()) return found;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const Finding& f : found) {
    std::fprintf(stderr, "log audit: %s:%zu contains %s\n", f.file.c_str(), f.line, f.what.c_str());
    r.findings.push_back(f);
  }
  return found;
}

std::vector<Finding> findings() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.findings;
}

int report(int status) {
  const std::vector<Finding> all = findings();
  if (all.empty()) return status;
  std::fprintf(
      stderr,
      "\nlog audit FAILED: %zu secret(s) found in daemon logs (set PAYORCH_KEEP_TEST_DIRS=1 "
      "to keep the logs):\n",
      all.size());
  for (const Finding& f : all)
    std::fprintf(stderr, "  %s:%zu: %s\n", f.file.c_str(), f.line, f.what.c_str());
  return status == 0 ? 1 : status;
}

}  // namespace payorch::test::log_audit
