#pragma once
// Operator commands that talk to a running payorchd over its HTTP API (address, server.tls and
// admin token from the config): `status`, `recon list|show|resolve|import`, `payment show`, `refund show`.
#include <string>
#include <vector>

#include "config/config.h"

namespace payorch::ops {

// Returns true when `command` (argv[1]) is an operator command.
bool is_operator_command(const std::string& command);

// Runs it; `args` are the arguments after the command (already stripped of --config FILE), the
// common --ca-file FILE among them.
// Prints results to stdout, errors to stderr; returns the process exit code.
int run_operator_command(const config::Config& cfg, const std::string& command,
                         const std::vector<std::string>& args);

}  // namespace payorch::ops
