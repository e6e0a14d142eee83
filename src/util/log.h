#pragma once
// Structured logs: one line per event on stderr (journald under systemd), logfmt:
//
//   payorchd level=warn event=engine.cas_refused payment_id=pay_… client_key=ck_… fence=7 result=stale_fence msg="…"
//
// The event name is stable (alerts and tests match on it); fields carry ids, never tenant
// secrets: tokens, API keys, callback/webhook secrets and full payment source tokens must not
// be passed here (see mask()).
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace payorch::log {

enum class Level { debug, info, warn, error, alert };
std::string_view to_string(Level l);

struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v ? v : "") {}
  Field(std::string_view k, std::int64_t v) : key(k), value(std::to_string(v)) {}
  Field(std::string_view k, int v) : key(k), value(std::to_string(v)) {}
  Field(std::string_view k, std::uint64_t v) : key(k), value(std::to_string(v)) {}
  Field(std::string_view k, unsigned v) : key(k), value(std::to_string(v)) {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  std::string_view key;
  std::string value;
};

// The program name at the start of every line ("payorchd", "payorch-vendor-sim").
void set_program(std::string_view name);

// The node every line from now on names (node=…, after the event's own fields): several payorchd on one
// database log to one place, and each line says which one wrote it. "" names none.
void set_node(std::string_view node);

// Where lines go instead of stderr (the deterministic simulation keeps them in memory and shows
// them only for a failing seed). An empty function restores stderr. The sink is called under a
// lock, one whole line (with its newline) at a time.
void set_sink(std::function<void(std::string_view line)> sink);

// Writes one line (atomically: a single write(2)). `msg` is free text for humans.
void write(Level level, std::string_view event, std::string_view msg,
           std::initializer_list<Field> fields = {});
// The same, for fields assembled at run time.
void write(Level level, std::string_view event, std::string_view msg, const std::vector<Field>& fields);

inline void info(std::string_view event, std::string_view msg, std::initializer_list<Field> f = {}) {
  write(Level::info, event, msg, f);
}
inline void warn(std::string_view event, std::string_view msg, std::initializer_list<Field> f = {}) {
  write(Level::warn, event, msg, f);
}
inline void error(std::string_view event, std::string_view msg, std::initializer_list<Field> f = {}) {
  write(Level::error, event, msg, f);
}
// Needs a human now (alert on it): a late contradiction, refused credentials, ...
inline void alert(std::string_view event, std::string_view msg, std::initializer_list<Field> f = {}) {
  write(Level::alert, event, msg, f);
}

// The line write() would produce, without the program name (for tests).
std::string format(Level level, std::string_view event, std::string_view msg,
                   std::initializer_list<Field> fields);
std::string format(Level level, std::string_view event, std::string_view msg,
                   const std::vector<Field>& fields);

// A value that may be sensitive shown by its first 4 characters only: "tok_…". Use it for
// payment source tokens.
std::string mask(std::string_view value);

}  // namespace payorch::log
