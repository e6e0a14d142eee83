#pragma once
// Secrets must never reach a log (docs/contract.md §7). Every secret the tests hand to payorchd — bearer
// tokens, vendor API keys, callback and webhook secrets, TLS private keys — is registered here,
// and every daemon log is scanned for all of them when its Daemon is destroyed. A finding fails
// the test run at exit (tests/doctest_main.cpp), whichever test case leaked it.
#include <string>
#include <string_view>
#include <vector>

namespace payorch::test::log_audit {

struct Finding {
  std::string file;  // the log that contained it
  std::string what;  // the secret's description, never the secret itself
  std::size_t line = 0;
};

// Adds a secret to look for; `what` describes it in reports ("acme's bearer token"). Secrets
// shorter than 8 characters are refused (std::invalid_argument): they would match by chance.
// The defaults of tests/support (daemon.h tokens, the sim's API key and callback secret, the
// webhook secret the tests use) are registered from the start. Thread-safe.
void register_secret(std::string_view secret, std::string_view what);

// The registered secrets found in `text` (one finding per secret and line). Records nothing.
std::vector<Finding> find_secrets(std::string_view text, std::string_view file_name);

// Scans every *.log file directly in `dir`, records what it finds (and prints each finding to
// stderr at once), and returns this scan's findings. A missing directory is no finding.
std::vector<Finding> audit_logs(const std::string& dir);

// Everything recorded so far.
std::vector<Finding> findings();

// Prints a summary of the findings to stderr; returns `status`, or 1 when there were findings.
int report(int status);

}  // namespace payorch::test::log_audit
