#pragma once
// What the configuration tests (tests/config/*_test.cpp) share: a complete, valid
// configuration, one-line edits of it, and the checks that loading an edit fails with a given
// message on a given line.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace payorch::test {

// A complete, valid configuration. Tests change it one line at a time with edit().
extern const std::string valid_yaml;
// A second provider, "other" (recovery: replay), as an entry of providers[].
extern const std::string second_provider;

// `yaml` with the only occurrence of `from` replaced by `to`.
std::string edit(std::string yaml, std::string_view from, std::string_view to);

// `yaml` with second_provider at the end of providers[].
std::string with_second_provider(const std::string& yaml);

// valid_yaml with its provider a wechatpay one (the shipped preset), its keys (files under
// tests/emulators/wechatpay/keys/), serials and product as given.
std::string with_wechatpay(const std::string& serial_no, const std::string& private_key,
                           const std::string& platform_serial, const std::string& platform_key,
                           const std::string& product = "native");

// 1-based number of the first line containing `needle`.
int line_of(const std::string& yaml, std::string_view needle);

// "FILE:LINE:" for the first line of `yaml` containing `needle`: how the errors on it start
// when `yaml` is loaded as `file`.
std::string line_prefix(const std::string& file, const std::string& yaml, std::string_view needle);

// What load_from_string() threw, one entry per line; empty when it loaded.
std::vector<std::string> errors_of(const std::string& yaml, const std::string& name = "test.yaml");

// `lines`, each ended by a newline: errors_of() as a failure message shows it.
std::string joined(const std::vector<std::string>& lines);

// Whether one of `errors` starts with `prefix` ("FILE:LINE:") and contains `message`.
bool has_error(const std::vector<std::string>& errors, const std::string& prefix,
               std::string_view message);

// Loading `yaml` fails with an error on the line containing `needle` (or on `line` if given)
// whose text contains `message` (which starts with the key path).
void check_error(const std::string& yaml, std::string_view needle, std::string_view message,
                 int line = 0);

// One change to valid_yaml and the error it must cause on the line containing `needle`.
struct BadEdit {
  std::string_view from;
  std::string_view to;
  std::string_view needle;
  std::string_view message;
};

void check_edits(std::initializer_list<BadEdit> cases);

// `yaml` loaded; fails the test with the errors when it does not load.
config::Config load_ok(const std::string& yaml, const std::string& name = "test.yaml");

// Sets (or, given nullopt, unsets) an environment variable for one test and restores it.
class ScopedEnv {
public:
  ScopedEnv(const char* name, std::optional<std::string> value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace payorch::test
