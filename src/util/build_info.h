#pragma once
// What payorchd was built from, for payorch_build_info on GET /metrics.
#include <string_view>

namespace payorch {

// The project version (CMake's PROJECT_VERSION).
constexpr std::string_view build_version() { return PAYORCH_VERSION; }
// The commit, `git rev-parse --short=12 HEAD` when built; "unknown" outside a git checkout.
// Defined in a source file generated at each build (tools/build_info.cmake), so a new commit
// recompiles that one file only.
std::string_view build_commit();

}  // namespace payorch
