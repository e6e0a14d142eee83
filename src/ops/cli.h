#pragma once
// Operator commands that talk to a running payorchd over its admin API: `status`,
// `recon list|show|resolve|import`, `payment show`, `refund show`. Where the daemon is and its
// admin token come from a small client configuration, flags, the environment or the daemon's
// own configuration (ops/client_config.h).
#include <string>
#include <vector>

namespace payorch::ops {

// Returns true when `command` (argv[1]) is an operator command.
bool is_operator_command(const std::string& command);

// The usage of an operator command (for `payorchd CMD --help`), with the options every one takes.
std::string operator_usage(const std::string& command);

// Runs it; `args` are the arguments after the command, the common options (--config,
// --client-config, --url, --token-file, --ca-file, --json) among them.
// Prints results to stdout, errors to stderr; returns the process exit code: 0 done, 1 the
// daemon refused or could not be reached, 2 a usage error or an unusable local file.
int run_operator_command(const std::string& command, const std::vector<std::string>& args);

}  // namespace payorch::ops
