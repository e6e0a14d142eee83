#include "util/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <span>

#include "core/clock.h"
#include "core/enum_names.h"

namespace payorch::log {
namespace {

std::mutex program_mu;
std::string program = "payorchd";
std::string node;  // set_node
std::mutex sink_mu;
std::function<void(std::string_view)> sink;  // empty: stderr
std::atomic<int> lowest_level{static_cast<int>(Level::info)};
thread_local Context* current = nullptr;

constexpr EnumNames<Level, 5> level_names{{
    {Level::debug, "debug"},
    {Level::info, "info"},
    {Level::warn, "warn"},
    {Level::error, "error"},
    {Level::alert, "alert"},
}};

bool needs_quotes(std::string_view v) {
  if (v.empty()) return true;
  for (unsigned char c : v)
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f) return true;
  return false;
}

void append_value(std::string& out, std::string_view v) {
  if (!needs_quotes(v)) {
    out += v;
    return;
  }
  out += '"';
  for (unsigned char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < ' ' || c == 0x7f) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace

std::string_view to_string(Level l) { return name_of(level_names, l); }

void set_level(Level lowest) { lowest_level.store(static_cast<int>(lowest)); }
Level level() { return static_cast<Level>(lowest_level.load()); }

std::optional<Level> parse_level(std::string_view name) {
  return value_of(level_names, name);
}

int journal_priority(Level l) {
  switch (l) {
    case Level::debug: return 7;  // SD_DEBUG
    case Level::info: return 6;   // SD_INFO
    case Level::warn: return 4;   // SD_WARNING
    case Level::error: return 3;  // SD_ERR
    case Level::alert: return 1;  // SD_ALERT
  }
  return 6;
}

bool is_journal_stream(const char* journal_stream, std::uint64_t dev, std::uint64_t ino) {
  if (journal_stream == nullptr) return false;
  const std::string_view v(journal_stream);
  const std::size_t colon = v.find(':');
  if (colon == std::string_view::npos) return false;
  auto number = [](std::string_view digits, std::uint64_t& out) {
    if (digits.empty()) return false;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return ec == std::errc{} && end == digits.data() + digits.size();
  };
  std::uint64_t want_dev = 0;
  std::uint64_t want_ino = 0;
  return number(v.substr(0, colon), want_dev) && number(v.substr(colon + 1), want_ino) &&
         want_dev == dev && want_ino == ino;
}

ContextScope::ContextScope(Context& ctx) : previous_(current) { current = &ctx; }
ContextScope::~ContextScope() { current = previous_; }
Context* current_context() { return current; }
void note_operation(std::string_view operation_id) {
  if (current != nullptr) current->operation_id = std::string(operation_id);
}
void note_tenant(std::string_view tenant) {
  if (current != nullptr) current->tenant = std::string(tenant);
}

std::string timestamp(std::chrono::system_clock::time_point t) {
  return format_rfc3339(
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

void set_program(std::string_view name) {
  std::lock_guard lock(program_mu);
  program = std::string(name);
}

void set_node(std::string_view name) {
  std::lock_guard lock(program_mu);
  node = std::string(name);
}

namespace {

// Whether stderr is the journal (decided once, at the first line written to it).
bool stderr_is_journal() {
  static const bool journal = [] {
    struct stat st {};
    if (::fstat(STDERR_FILENO, &st) != 0) return false;
    return is_journal_stream(std::getenv("JOURNAL_STREAM"), static_cast<std::uint64_t>(st.st_dev),
                             static_cast<std::uint64_t>(st.st_ino));
  }();
  return journal;
}

bool has_key(std::span<const Field> fields, std::string_view key) {
  for (const Field& f : fields)
    if (f.key == key) return true;
  return false;
}

void append_field(std::string& line, std::string_view key, std::string_view value) {
  line += ' ';
  line += key;
  line += '=';
  append_value(line, value);
}

std::string format_fields(Level level, std::string_view event, std::string_view msg,
                          const Field* fields, std::size_t n, std::string_view node_name = {},
                          const Context* ctx = nullptr) {
  std::string line = "level=";
  line += to_string(level);
  line += " event=";
  append_value(line, event);
  const std::span<const Field> own(fields, n);
  for (const Field& f : own) append_field(line, f.key, f.value);
  if (ctx != nullptr) {
    if (!ctx->request_id.empty() && !has_key(own, "request_id"))
      append_field(line, "request_id", ctx->request_id);
    if (!ctx->tenant.empty() && !has_key(own, "tenant") && !has_key(own, "tenant_id"))
      append_field(line, "tenant", ctx->tenant);
    if (!ctx->operation_id.empty() && !has_key(own, "operation_id"))
      append_field(line, "operation_id", ctx->operation_id);
  }
  if (!node_name.empty()) {
    line += " node=";
    append_value(line, node_name);
  }
  if (!msg.empty()) {
    line += " msg=";
    append_value(line, msg);
  }
  return line;
}

void write_fields(Level level, std::string_view event, std::string_view msg, const Field* fields,
                  std::size_t n) {
  if (static_cast<int>(level) < lowest_level.load(std::memory_order_relaxed)) return;
  std::string this_program;
  std::string this_node;
  {
    std::lock_guard lock(program_mu);
    this_program = program;
    this_node = node;
  }
  const std::string rest = format_fields(level, event, msg, fields, n, this_node, current) + '\n';
  {
    std::lock_guard lock(sink_mu);
    if (sink) {
      sink(this_program + ' ' + rest);
      return;
    }
  }
  std::string line;
  if (stderr_is_journal()) {
    line += '<';
    line += std::to_string(journal_priority(level));
    line += '>';
  }
  line += this_program;
  line += " ts=";
  line += timestamp(std::chrono::system_clock::now());
  line += ' ';
  line += rest;
  // One write(2) per line: lines from several threads never interleave.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t written = ::write(STDERR_FILENO, p, left);
    if (written <= 0) return;
    p += written;
    left -= static_cast<std::size_t>(written);
  }
}

}  // namespace

std::string format(Level level, std::string_view event, std::string_view msg,
                   std::initializer_list<Field> fields) {
  return format_fields(level, event, msg, fields.begin(), fields.size());
}

std::string format(Level level, std::string_view event, std::string_view msg,
                   const std::vector<Field>& fields) {
  return format_fields(level, event, msg, fields.data(), fields.size());
}

void write(Level level, std::string_view event, std::string_view msg,
           std::initializer_list<Field> fields) {
  write_fields(level, event, msg, fields.begin(), fields.size());
}

void write(Level level, std::string_view event, std::string_view msg, const std::vector<Field>& fields) {
  write_fields(level, event, msg, fields.data(), fields.size());
}

void set_sink(std::function<void(std::string_view line)> s) {
  std::lock_guard lock(sink_mu);
  sink = std::move(s);
}

std::string mask(std::string_view value) {
  if (value.size() <= 4) return std::string(value.size(), '*');
  return std::string(value.substr(0, 4)) + "…";
}

}  // namespace payorch::log
