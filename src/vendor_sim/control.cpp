#include "vendor_sim/control.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <exception>

#include "util/log.h"

namespace payorch::vendor_sim {
namespace {

namespace json = boost::json;
using verb = beast_http::verb;

Response invalid(const std::string& message) {
  json::object body = error_json("invalid_request");
  body["error"].as_object()["message"] = message;
  return json_response(400, body);
}

Response method_not_allowed() { return error_response(405, "method_not_allowed"); }

json::object config_json(const SimConfig& c) {
  json::object o;
  o["lookup_enabled"] = c.lookup_enabled;
  o["callbacks_enabled"] = c.callbacks_enabled;
  o["duplicate_callbacks"] = c.duplicate_callbacks;
  o["clock_offset_ms"] = c.clock_offset_ms;
  return o;
}

// Applies `o` to a copy, so a bad member changes nothing.
bool apply_config(const json::object& o, SimConfig& config, std::string& error) {
  SimConfig next = config;
  for (const auto& member : o) {
    const std::string_view key = member.key();
    const json::value& v = member.value();
    bool* flag = key == "lookup_enabled"        ? &next.lookup_enabled
                 : key == "callbacks_enabled"   ? &next.callbacks_enabled
                 : key == "duplicate_callbacks" ? &next.duplicate_callbacks
                                                : nullptr;
    if (flag) {
      if (!v.is_bool()) {
        error = std::string(key) + " must be a boolean";
        return false;
      }
      *flag = v.as_bool();
    } else if (key == "clock_offset_ms") {
      if (!v.is_int64()) {
        error = "clock_offset_ms must be an integer";
        return false;
      }
      next.clock_offset_ms = v.as_int64();
    } else {
      error = "unknown member \"" + std::string(key) + "\"";
      return false;
    }
  }
  config = next;
  return true;
}

}  // namespace

Response Control::handle(verb method, std::string_view path, const std::string& body) {
  try {
    if (path == "/_sim/faults") return faults(method, body);
    if (path == "/_sim/config") return config(method, body);
    if (path == "/_sim/ledger" || path == "/_sim/callbacks") {
      if (method != verb::get) return method_not_allowed();
      json::object out;
      if (path == "/_sim/ledger") {
        json::array charges;
        for (const Charge& c : ledger_.all_charges()) charges.push_back(ledger_json(c));
        out["charges"] = std::move(charges);
        json::array refunds;
        for (const Refund& r : ledger_.all_refunds()) refunds.push_back(ledger_json(r));
        out["refunds"] = std::move(refunds);
      } else {
        out["callbacks"] = ledger_.callbacks_json();
      }
      return json_response(200, out);
    }
  } catch (const std::exception& e) {
    log::error("sim.storage_failed", e.what(), {{"op", "control"}});
    return error_response(500, "internal_error");
  }
  return error_response(404, "not_found");
}

Response Control::faults(verb method, const std::string& body) {
  if (method == verb::post) {
    boost::system::error_code ec;
    const json::value v = json::parse(body, ec);
    if (ec) return invalid("the body is not JSON");
    std::string error;
    auto fault = parse_fault_json(v, error);
    if (!fault) return invalid(error);
    log::info("control.fault_queued", "", {{"fault", json::serialize(to_json(*fault))}});
    vendor_.faults().push(std::move(*fault));
  } else if (method == verb::delete_) {
    vendor_.faults().clear();
    log::info("control.faults_cleared", "");
  } else if (method != verb::get) {
    return method_not_allowed();
  }
  json::object out;
  out["faults"] = vendor_.faults().to_json();
  return json_response(200, out);
}

Response Control::config(verb method, const std::string& body) {
  if (method == verb::post) {
    boost::system::error_code ec;
    const json::value v = json::parse(body, ec);
    if (ec || !v.is_object()) return invalid("the body must be a JSON object");
    std::string error;
    if (!apply_config(v.as_object(), state_.config, error)) return invalid(error);
    log::info("control.config", "", {{"config", json::serialize(config_json(state_.config))}});
    dispatcher_.kick();  // the clock or the callback switch may have made work due
  } else if (method != verb::get) {
    return method_not_allowed();
  }
  return json_response(200, config_json(state_.config));
}

}  // namespace payorch::vendor_sim
