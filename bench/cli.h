#pragma once
// Command-line values shared by the benchmark programs. Each throws std::invalid_argument with
// a one-line message naming the flag.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace payorch::bench {

// An integer in 1..max.
std::int64_t parse_positive(const std::string& flag, const std::string& text, std::int64_t max);

// "a,b,c" → {"a","b","c"}; no item may be empty.
std::vector<std::string> parse_list(const std::string& flag, const std::string& text);

// 250ms, 2s, 5m, 24h, 7d (the daemon's own duration syntax).
std::chrono::milliseconds parse_duration_flag(const std::string& flag, const std::string& text);

// True when any argument is --help.
bool asks_for_help(int argc, char** argv);

// $TMPDIR, or /tmp.
std::string default_work_dir();

}  // namespace payorch::bench
