#include "vendor_sim/faults.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <charconv>
#include <limits>

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;

struct ModeName {
  FaultMode mode;
  std::string_view name;
};
constexpr ModeName mode_names[] = {
    {FaultMode::fail_before_commit, "fail_before_commit"},
    {FaultMode::commit_then_5xx, "commit_then_5xx"},
    {FaultMode::commit_then_hang, "commit_then_hang"},
    {FaultMode::delayed_commit, "delayed_commit"},
    {FaultMode::latency, "latency"},
};

// A delay above an hour is a typo, not a test.
constexpr std::int64_t max_delay_ms = 3'600'000;

std::optional<std::int64_t> json_int(const json::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64() && v.as_uint64() <= static_cast<std::uint64_t>(
                                            std::numeric_limits<std::int64_t>::max()))
    return static_cast<std::int64_t>(v.as_uint64());
  return std::nullopt;
}

// The checks shared by the JSON and the flag form.
bool check_fault(const Fault& f, std::string& error) {
  if (f.count == 0 || f.count < -1) {
    error = "count must be a positive integer or -1 (always)";
    return false;
  }
  if (f.delay_ms < 0 || f.delay_ms > max_delay_ms) {
    error = "delay_ms must be between 0 and " + std::to_string(max_delay_ms);
    return false;
  }
  if (f.source && f.source->empty()) {
    error = "source must not be empty";
    return false;
  }
  return true;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

}  // namespace

std::string_view to_string(FaultMode mode) {
  for (const auto& m : mode_names)
    if (m.mode == mode) return m.name;
  return "unknown";
}

std::string_view to_string(Operation op) { return op == Operation::charge ? "charge" : "refund"; }

std::optional<Operation> parse_operation(std::string_view text) {
  for (Operation op : {Operation::charge, Operation::refund})
    if (to_string(op) == text) return op;
  return std::nullopt;
}

std::optional<FaultMode> parse_fault_mode(std::string_view text) {
  for (const auto& m : mode_names)
    if (m.name == text) return m.mode;
  return std::nullopt;
}

std::int64_t default_delay_ms(FaultMode mode) {
  switch (mode) {
    case FaultMode::commit_then_hang: return 30'000;
    case FaultMode::delayed_commit:
    case FaultMode::latency: return 1'000;
    case FaultMode::fail_before_commit:
    case FaultMode::commit_then_5xx: return 0;
  }
  return 0;
}

std::optional<Fault> parse_fault_json(const json::value& v, std::string& error) {
  const json::object* o = v.if_object();
  if (!o) {
    error = "the body must be a JSON object";
    return std::nullopt;
  }
  Fault f;
  const json::value* mode = o->if_contains("mode");
  const json::string* mode_text = mode ? mode->if_string() : nullptr;
  const auto parsed = mode_text ? parse_fault_mode(*mode_text) : std::nullopt;
  if (!parsed) {
    error = "mode must be one of fail_before_commit, commit_then_5xx, commit_then_hang, "
            "delayed_commit, latency";
    return std::nullopt;
  }
  f.mode = *parsed;
  f.delay_ms = default_delay_ms(f.mode);
  for (const auto& member : *o) {
    const std::string_view key = member.key();
    if (key == "mode") continue;
    if (key == "count" || key == "delay_ms") {
      const auto n = json_int(member.value());
      if (!n) {
        error = std::string(key) + " must be an integer";
        return std::nullopt;
      }
      (key == "count" ? f.count : f.delay_ms) = *n;
    } else if (key == "source") {
      if (member.value().is_null()) continue;
      const json::string* s = member.value().if_string();
      if (!s) {
        error = "source must be a string";
        return std::nullopt;
      }
      f.source = std::string(*s);
    } else if (key == "operation") {
      if (member.value().is_null()) continue;
      const json::string* s = member.value().if_string();
      f.operation = s ? parse_operation(*s) : std::nullopt;
      if (!f.operation) {
        error = "operation must be \"charge\" or \"refund\"";
        return std::nullopt;
      }
    } else {
      error = "unknown member \"" + std::string(key) + "\"";
      return std::nullopt;
    }
  }
  if (!check_fault(f, error)) return std::nullopt;
  return f;
}

std::optional<Fault> parse_fault_spec(std::string_view spec, std::string& error) {
  const std::size_t comma = spec.find(',');
  const auto mode = parse_fault_mode(spec.substr(0, comma));
  if (!mode) {
    error = "unknown fault mode \"" + std::string(spec.substr(0, comma)) + "\"";
    return std::nullopt;
  }
  Fault f;
  f.mode = *mode;
  f.delay_ms = default_delay_ms(f.mode);
  std::string_view rest = comma == std::string_view::npos ? "" : spec.substr(comma + 1);
  while (!rest.empty()) {
    const std::size_t next = rest.find(',');
    const std::string_view item = rest.substr(0, next);
    rest = next == std::string_view::npos ? "" : rest.substr(next + 1);
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (key == "count" || key == "delay_ms") {
      const auto n = parse_int(value);
      if (!n) {
        error = std::string(key) + " must be an integer, got \"" + std::string(value) + "\"";
        return std::nullopt;
      }
      (key == "count" ? f.count : f.delay_ms) = *n;
    } else if (key == "source") {
      f.source = std::string(value);
    } else if (key == "operation") {
      f.operation = parse_operation(value);
      if (!f.operation) {
        error = "operation must be charge or refund, got \"" + std::string(value) + "\"";
        return std::nullopt;
      }
    } else {
      error = "unknown fault setting \"" + std::string(item) + "\"";
      return std::nullopt;
    }
  }
  if (!check_fault(f, error)) return std::nullopt;
  return f;
}

json::object to_json(const Fault& fault) {
  json::object o;
  o["mode"] = to_string(fault.mode);
  o["count"] = fault.count;
  o["delay_ms"] = fault.delay_ms;
  o["source"] = fault.source ? json::value(*fault.source) : json::value(nullptr);
  o["operation"] = fault.operation ? json::value(to_string(*fault.operation)) : json::value(nullptr);
  return o;
}

void FaultQueue::push(Fault fault) { faults_.push_back(std::move(fault)); }

std::optional<Fault> FaultQueue::take(std::optional<std::string_view> source, Operation op) {
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->operation && *it->operation != op) continue;
    if (it->source && (!source || *it->source != *source)) continue;
    Fault taken = *it;
    if (it->count > 0 && --it->count == 0) faults_.erase(it);
    return taken;
  }
  return std::nullopt;
}

json::array FaultQueue::to_json() const {
  json::array out;
  for (const auto& f : faults_) out.push_back(vendor_sim::to_json(f));
  return out;
}

}  // namespace payorch::vendor_sim
