#pragma once
// Structured logs: one line per event on stderr (journald under systemd), logfmt:
//
//   payorchd ts=2026-12-03T01:02:03.456Z level=warn event=engine.cas_refused payment_id=pay_… fence=7 msg="…"
//
// ts is the wall clock in RFC 3339 UTC with milliseconds. When stderr is the journal
// (JOURNAL_STREAM names fd 2), each line starts with its syslog priority (`<3>` for error, see
// journal_priority) so that `journalctl -p err` isolates errors. Lines below set_level() are
// dropped. A line written while a request's Context is in scope on the thread carries its
// request_id and tenant (after the event's own fields, unless it names them itself: request_id,
// tenant or tenant_id).
//
// The event name is stable (alerts and tests match on it); fields carry ids, never tenant
// secrets: tokens, API keys, callback/webhook secrets and full payment source tokens must not
// be passed here (see mask()).
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
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

// Lines below `lowest` are dropped (log.level; default info).
void set_level(Level lowest);
Level level();
// Parses "debug", "info", "warn", "error" (and "alert"); nullopt for anything else.
std::optional<Level> parse_level(std::string_view name);

// The syslog priority journald reads from a `<N>` prefix (sd-daemon.h): debug 7, info 6,
// warn 4, error 3, alert 1.
int journal_priority(Level l);
// Whether stderr is the journal: systemd sets JOURNAL_STREAM to "<st_dev>:<st_ino>" (decimal)
// of the stream it connected; it is the journal only when fd 2 is still that stream.
// `journal_stream` is the variable's value (nullptr when unset).
bool is_journal_stream(const char* journal_stream, std::uint64_t dev, std::uint64_t ino);

// What the lines a request causes carry: its request id, its tenant once authenticated, and the
// operation id it names once the handler has read it.
// Set by the HTTP layer (http/instrumented.cpp) for the duration of the request's synchronous
// handling on its thread; lines written later on other threads (the writer, the engine) do not
// carry it.
struct Context {
  std::string request_id;
  std::string tenant;
  std::string operation_id;
};
// Makes `ctx` the calling thread's context until destroyed (the previous one is restored).
class ContextScope {
public:
  explicit ContextScope(Context& ctx);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

private:
  Context* previous_;
};
// The calling thread's context, or nullptr.
Context* current_context();
// Records the authenticated tenant in the calling thread's context, if there is one.
void note_tenant(std::string_view tenant);
// Records the operation id the request names (a payment's or a refund's), likewise.
void note_operation(std::string_view operation_id);

// Where lines go instead of stderr (the deterministic simulation keeps them in memory and shows
// them only for a failing seed). An empty function restores stderr. The sink is called under a
// lock, one whole line (with its newline) at a time. Lines sent to a sink carry no ts= and no
// journal prefix, so that a simulated run's log depends on its seed only.
void set_sink(std::function<void(std::string_view line)> sink);

// Writes one line (atomically: a single write(2)). `msg` is free text for humans.
void write(Level level, std::string_view event, std::string_view msg,
           std::initializer_list<Field> fields = {});
// The same, for fields assembled at run time.
void write(Level level, std::string_view event, std::string_view msg, const std::vector<Field>& fields);

inline void debug(std::string_view event, std::string_view msg, std::initializer_list<Field> f = {}) {
  write(Level::debug, event, msg, f);
}
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

// The ts= field's value: RFC 3339 UTC with milliseconds (core/clock.h's format_rfc3339).
std::string timestamp(std::chrono::system_clock::time_point t);

// A value that may be sensitive shown by its first 4 characters only: "tok_…". Use it for
// payment source tokens.
std::string mask(std::string_view value);

}  // namespace payorch::log
