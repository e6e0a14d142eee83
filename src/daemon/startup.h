#pragma once
// What `payorchd serve` checks and writes before it serves: the database's single-instance lock,
// its commit mark, drains that could be cut short, the port file.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.h"
#include "store/database.h"

namespace payorch::daemon {

// How long a SIGTERM drain may take before payorchd gives up on what is still in flight. Below
// the unit's TimeoutStopSec (45s), so that systemd never has to SIGKILL a drain.
inline constexpr std::chrono::seconds drain_limit{40};

// The single-instance lock of the database, unless PAYORCH_TEST_SHARED_DATABASE=1. That
// variable is for tests only (like PAYORCH_FAILPOINTS): the stale-worker test runs two payorchd
// on one file on purpose, to show that fencing alone keeps the data right. Throws
// store::DatabaseInUse when another instance holds it.
std::optional<store::InstanceLock> lock_database(const std::string& path);

// Whether the database may be served: not when it is behind its commit mark (store/commit_mark.h)
// — it has lost transactions it committed and acknowledged, a deleted -wal file or an older copy
// of the file — unless the operator, having looked, says so with --accept-lost-commits; then the
// mark is brought down to the database, so that the next start is an ordinary one. Logs why.
bool commits_intact_or_accepted(const std::string& path, bool accept_lost_commits);

// A drain waits for vendor calls and webhook pushes in flight; warns of each one that may
// outlast drain_limit and so be cut off (its lease then lapses and recovery treats the call as
// UNKNOWN).
void warn_about_slow_drain(const config::Config& cfg);

// This node's id (config::Engine::node_id): the configured one, or else node_id_from_host of
// the host name.
std::string node_id(const config::Engine& engine);
// A host name as a node id: lower-cased, every other character than [a-z0-9_-] as '-', at most
// 64 characters; "payorchd" for an empty one.
std::string node_id_from_host(std::string_view host);

// Writes `port` and a newline to `path`, atomically (temp file, rename), so a reader never sees
// a partial number. Throws std::runtime_error when it cannot.
void write_port_file(const std::string& path, std::uint16_t port);

}  // namespace payorch::daemon
