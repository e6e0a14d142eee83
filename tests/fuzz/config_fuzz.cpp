// Fuzz target: the configuration loader (config::load_from_string, docs/contract.md §7).
//
// Input: YAML text. It is loaded as "<tmp>/fuzz.yaml", where <tmp> is a private folder holding
// secret files, a PEM certificate with its key and a key that does not match it, an empty file
// and a folder, so that *_file settings and server.tls can succeed and fail in every way; it is
// also ${CREDENTIALS_DIRECTORY}. Inputs whose *_file paths point outside that folder are skipped
// (reading /dev/stdin or /proc would make the run depend on the machine).
//
// Properties: load either returns a Config or throws ConfigError, nothing else; every line of a
// ConfigError is "<file>:<line>:<col>: <key path>: <message>" with a line inside the text, in
// file order; a Config that loads satisfies every rule the loader promises (tokens distinct and
// long enough, names valid and unique, the default provider exists, durations in range, the
// lease longer than every vendor request, the inbox retention covering every retry horizon, the
// resubmission budget under 0.9 x key_retention); loading is deterministic; parse_duration only
// accepts "<positive integer><unit>" within max_duration.
#include <stdlib.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/reader.h"
#include "fuzz_check.h"

namespace {

using namespace payorch;
using namespace payorch::config;
namespace fs = std::filesystem;

// A throwaway self-signed EC certificate (CN=localhost) and its key; and an unrelated key.
constexpr const char* cert_pem = R"(-----BEGIN CERTIFICATE-----
MIIBfzCCASWgAwIBAgIUKWCi4yscBejQ3TJjPuzUV3C9Dz8wCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyOTE0NDcwOVoYDzIxMjYxMTA1
MTQ0NzA5WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAARy7pttDP2YqN6ElvYK2hb9wr9Mc5nlCSDR5q7ULo3Qm6oSQaXADH1z
7X9d7zOey8E+L1F2k6Y5OmK8iN5yAbqPo1MwUTAdBgNVHQ4EFgQU0H05ByZJpFs/
ICoLu9zgQ1ePEKMwHwYDVR0jBBgwFoAU0H05ByZJpFs/ICoLu9zgQ1ePEKMwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiAu3u1hoA+i8jl75egUf+/u
CC6VVmpLgJoi6X71D+gkPwIhAMKyL4dSv2A1wMjADzxGkroYv8RkaZMC1OR/ss4D
nnVV
-----END CERTIFICATE-----
)";
constexpr const char* key_pem = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgqnHNt5fY5EfnV8NL
VSDOizrvwpjWNNsv0xp5hOt4XmehRANCAARy7pttDP2YqN6ElvYK2hb9wr9Mc5nl
CSDR5q7ULo3Qm6oSQaXADH1z7X9d7zOey8E+L1F2k6Y5OmK8iN5yAbqP
-----END PRIVATE KEY-----
)";
constexpr const char* other_key_pem = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgb1/op7V41Y0OoSOR
6HqZN+yW5p1nqAkTgKU5JIwsbkKhRANCAARnrME9mH3Uz1UCXEvfvgBG4uuy420M
MeuiMclllNT7JnBoDIP6uZ0eJzo6j/S7wxfZc0dfh3CXrtMbv7Fn87IG
-----END PRIVATE KEY-----
)";

struct Sandbox {
  fs::path dir;
  std::string name;  // the config's file name, as it appears in messages
  Sandbox() {
    char tmpl[] = "/tmp/payorch-config-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    dir = fs::path(tmpl);
    name = (dir / "fuzz.yaml").string();
    auto put = [&](const std::string& rel, const std::string& text) {
      fs::create_directories((dir / rel).parent_path());
      std::ofstream(dir / rel, std::ios::binary) << text;
    };
    put("admin.token", "admin-token-from-file\n");
    put("tenant.token", "tenant-token-from-file\n");
    put("api.key", "sim-api-key-from-file\n");
    put("callback.secret", "callback-secret-from-file\n");
    put("webhook.secret", "webhook-secret-from-file\n");
    put("spaces.token", "token with spaces\n");
    put("empty.txt", "");
    put("blank.txt", " \n\t\n");
    put("tls/cert.pem", cert_pem);
    put("tls/key.pem", key_pem);
    put("tls/other.key", other_key_pem);
    put("tls/both.pem", std::string(cert_pem) + key_pem);
    put("creds/admin.token", "admin-token-credential\n");
    put("creds/tenant.token", "tenant-token-credential\n");
    fs::create_directories(dir / "folder");
    setenv("CREDENTIALS_DIRECTORY", (dir / "creds").c_str(), 1);
    std::atexit([] { std::error_code ec; fs::remove_all(get().dir, ec); });
  }
  static Sandbox& get() {
    static Sandbox* s = new Sandbox();
    return *s;
  }
  // Whether `given` (a *_file value) resolves to a path inside the sandbox.
  bool inside(const std::string& given) const {
    std::string problem;
    const std::optional<std::string> expanded = detail::expand_file_path(given, problem);
    if (!expanded) return true;  // refused before any file is touched
    if (expanded->find('\0') != std::string::npos) return false;
    fs::path p = fs::path(*expanded);
    if (!p.is_absolute()) p = dir / p;
    const std::string norm = p.lexically_normal().string();
    const std::string root = dir.string() + "/";
    return norm.starts_with(root) || norm + "/" == root;
  }
};

// Walks the document (aliases included, at most `budget` nodes) and reports whether every
// `*_file: <scalar>` stays inside the sandbox. False also when the budget runs out.
bool files_inside(const YAML::Node& n, const Sandbox& box, int& budget) {
  if (--budget < 0) return false;
  if (n.IsSequence()) {
    for (const auto& item : n)
      if (!files_inside(item, box, budget)) return false;
  } else if (n.IsMap()) {
    for (const auto& kv : n) {
      if (kv.first.IsScalar() && kv.first.Scalar().ends_with("_file") && kv.second.IsScalar() &&
          !box.inside(kv.second.Scalar()))
        return false;
      if (!files_inside(kv.first, box, budget) || !files_inside(kv.second, box, budget)) return false;
    }
  }
  return true;
}

// The loader reads files named in the first document only (a second one is an error in itself).
// Not YAML::LoadAll: yaml-cpp 0.7's never returns on some inputs (see config.cpp).
bool safe_to_load(const std::string& text, const Sandbox& box) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (...) {
    return true;  // the loader stops at the same syntax error, before reading any file
  }
  int budget = 20'000;
  return files_inside(doc, box, budget);
}

std::size_t max_line(std::string_view text) {
  // Every byte that may start a new line for some reader, plus the line after the last one.
  std::size_t breaks = 0;
  for (char c : text)
    if (c == '\n' || c == '\r' || static_cast<unsigned char>(c) == 0x85 || static_cast<unsigned char>(c) == 0xE2) ++breaks;
  return breaks + 2;
}

bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void check_error(const ConfigError& e, const std::string& name, std::string_view text) {
  const std::string what = e.what();
  FUZZ_CHECK(!what.empty());
  const std::string prefix = name + ":";
  long last_line = 0;
  std::size_t at = 0;
  while (at <= what.size()) {
    std::size_t end = what.find('\n', at);
    if (end == std::string::npos) end = what.size();
    const std::string_view line(what.data() + at, end - at);
    FUZZ_CHECK_MSG(line.starts_with(prefix), "error line without the file name: " + std::string(line));
    std::string_view rest = line.substr(prefix.size());
    const std::size_t c1 = rest.find(':');
    FUZZ_CHECK_MSG(c1 != std::string_view::npos && digits(rest.substr(0, c1)), "error line without a line number: " + std::string(line));
    const long line_no = std::stol(std::string(rest.substr(0, std::min<std::size_t>(c1, 9))));
    rest.remove_prefix(c1 + 1);
    const std::size_t c2 = rest.find(':');
    FUZZ_CHECK_MSG(c2 != std::string_view::npos && digits(rest.substr(0, c2)), "error line without a column: " + std::string(line));
    FUZZ_CHECK_MSG(line_no >= 1 && static_cast<std::size_t>(line_no) <= max_line(text),
                   "line number outside the text: " + std::string(line));
    FUZZ_CHECK_MSG(line_no >= last_line, "errors not in file order: " + what);
    last_line = line_no;
    rest.remove_prefix(c2 + 1);
    FUZZ_CHECK_MSG(rest.starts_with(" ") && rest.size() > 3 && rest.find(": ") != std::string_view::npos,
                   "error line without a key path and message: " + std::string(line));
    at = end + 1;
  }
}

bool visible(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}
bool name_ok(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
         });
}
bool duration_ok(Millis d) { return d.count() > 0 && d <= max_duration; }

void check_config(const Config& c, const std::string& name) {
  FUZZ_CHECK(c.source_path == name);
  FUZZ_CHECK(c.server.max_body_bytes >= 1 && c.server.max_header_bytes >= 1 && c.server.max_connections >= 1);
  FUZZ_CHECK(!c.server.listen_host.empty());
  FUZZ_CHECK(duration_ok(c.server.read_timeout) && duration_ok(c.server.idle_timeout));
  if (c.server.tls) FUZZ_CHECK(c.server.tls->cert_pem.find("BEGIN CERTIFICATE") != std::string::npos &&
                               c.server.tls->key_pem.find("PRIVATE KEY") != std::string::npos);
  FUZZ_CHECK((c.database.driver == "sqlite" && !c.database.path.empty() && c.database.url.empty()) ||
             (c.database.driver == "postgres" && c.database.url.starts_with("postgres") &&
              c.database.pool_size >= 1 && c.database.pool_size <= max_pool_size));
  FUZZ_CHECK(c.database.busy_retries >= 0 && c.database.max_batch >= 1 && duration_ok(c.database.busy_timeout));
  FUZZ_CHECK(c.engine.workers >= 1 && duration_ok(c.engine.lease) && duration_ok(c.engine.poll_interval));
  FUZZ_CHECK(duration_ok(c.retention.callback_inbox) && duration_ok(c.retention.delivered_events));

  std::set<std::string> tokens{c.admin_token};
  FUZZ_CHECK(c.admin_token.size() >= 8 && visible(c.admin_token));
  FUZZ_CHECK(!c.tenants.empty());
  std::set<std::string> ids;
  for (const Tenant& t : c.tenants) {
    FUZZ_CHECK(name_ok(t.id) && ids.insert(t.id).second);
    FUZZ_CHECK_MSG(t.token.size() >= 8 && visible(t.token) && tokens.insert(t.token).second, "tenant " + t.id + " token");
    if (t.webhook) {
      FUZZ_CHECK(t.webhook->url.starts_with("http://") || t.webhook->url.starts_with("https://"));
      FUZZ_CHECK(!t.webhook->secret.empty());
      FUZZ_CHECK(duration_ok(t.webhook->timeout) && duration_ok(t.webhook->initial_backoff) &&
                 duration_ok(t.webhook->max_backoff) && t.webhook->initial_backoff <= t.webhook->max_backoff);
    }
  }
  FUZZ_CHECK(!c.providers.empty());
  std::set<std::string> names;
  for (const Provider& p : c.providers) {
    FUZZ_CHECK(name_ok(p.name) && names.insert(p.name).second);
    FUZZ_CHECK(p.adapter == "sim");
    FUZZ_CHECK((p.base_url.starts_with("http://") || p.base_url.starts_with("https://")) && !p.base_url.ends_with('/'));
    FUZZ_CHECK(!p.api_key.empty() && visible(p.api_key));
    FUZZ_CHECK(!p.callback.secret.empty() && duration_ok(p.callback.tolerance) && duration_ok(p.callback.retry_horizon));
    FUZZ_CHECK(duration_ok(p.timeouts.connect) && duration_ok(p.contract.request_timeout));
    FUZZ_CHECK(duration_ok(p.contract.key_retention));
    if (p.contract.not_found_final_after) FUZZ_CHECK(duration_ok(*p.contract.not_found_final_after));
    FUZZ_CHECK(p.contract.max_attempts >= 1 && p.contract.initial_backoff <= p.contract.max_backoff &&
               duration_ok(p.contract.give_up_after));
    FUZZ_CHECK(p.risk.max_unknown_count >= 0 && p.risk.max_unknown_amount_minor >= 0);
    // docs/contract.md §5 startup checks.
    FUZZ_CHECK_MSG(c.engine.lease > p.contract.request_timeout, "lease not longer than the request timeout of " + p.name);
    FUZZ_CHECK(c.retention.callback_inbox >= p.callback.retry_horizon);
    const bool resubmits = p.contract.recovery == RecoveryMode::replay ||
                           (p.contract.recovery == RecoveryMode::lookup && p.contract.not_found_final_after);
    if (resubmits)
      FUZZ_CHECK_MSG((p.contract.give_up_after + p.contract.request_timeout + c.engine.lease).count() * 10 <=
                         p.contract.key_retention.count() * 9,
                     "resubmission budget over 0.9 x key_retention for " + p.name);
  }
  FUZZ_CHECK(c.find_provider(c.default_provider) != nullptr);
}

void check_duration(std::string_view text) {
  const std::optional<Millis> d = parse_duration(text);
  if (!d) return;
  FUZZ_CHECK(duration_ok(*d));
  std::size_t n = 0;
  while (n < text.size() && text[n] >= '0' && text[n] <= '9') ++n;
  const std::string_view unit = text.substr(n);
  FUZZ_CHECK(n > 0 && (unit == "ms" || unit == "s" || unit == "m" || unit == "h" || unit == "d"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_duration(std::string_view(text).substr(0, text.find('\n')));
  const Sandbox& box = Sandbox::get();
  if (!safe_to_load(text, box)) return 0;

  std::string outcome;
  for (int round = 0; round < (size % 8 == 0 ? 2 : 1); ++round) {
    std::string this_time;
    try {
      const Config cfg = load_from_string(text, box.name);
      check_config(cfg, box.name);
      this_time = "loaded";
    } catch (const ConfigError& e) {
      check_error(e, box.name, text);
      this_time = e.what();
    } catch (const std::exception& e) {
      FUZZ_CHECK_MSG(false, std::string("an undocumented exception escaped load_from_string: ") + e.what());
    }
    if (round == 1) FUZZ_CHECK_MSG(this_time == outcome, "loading the same text twice gave different results");
    outcome = std::move(this_time);
  }
  return 0;
}
