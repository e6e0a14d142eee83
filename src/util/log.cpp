#include "util/log.h"

#include <unistd.h>

#include <mutex>
#include <span>

#include "core/enum_names.h"

namespace payorch::log {
namespace {

std::mutex program_mu;
std::string program = "payorchd";
std::string node;  // set_node
std::mutex sink_mu;
std::function<void(std::string_view)> sink;  // empty: stderr

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

void set_program(std::string_view name) {
  std::lock_guard lock(program_mu);
  program = std::string(name);
}

void set_node(std::string_view name) {
  std::lock_guard lock(program_mu);
  node = std::string(name);
}

namespace {

std::string format_fields(Level level, std::string_view event, std::string_view msg,
                          const Field* fields, std::size_t n, std::string_view node_name = {}) {
  std::string line = "level=";
  line += to_string(level);
  line += " event=";
  append_value(line, event);
  for (const Field& f : std::span(fields, n)) {
    line += ' ';
    line += f.key;
    line += '=';
    append_value(line, f.value);
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
  std::string line;
  std::string this_node;
  {
    std::lock_guard lock(program_mu);
    line = program;
    this_node = node;
  }
  line += ' ';
  line += format_fields(level, event, msg, fields, n, this_node);
  line += '\n';
  {
    std::lock_guard lock(sink_mu);
    if (sink) {
      sink(line);
      return;
    }
  }
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
