#include "http/admin_api.h"

#include "config/contract.h"

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <charconv>
#include <memory>
#include <vector>

#include "core/intent.h"
#include "core/names.h"
#include "core/refund.h"
#include "core/strict_json.h"
#include "core/utf8.h"
#include "core/view.h"
#include "http/admin_timeline.h"
#include "http/instrumented.h"
#include "http/not_committed.h"
#include "http/request_fields.h"
#include "store/payments.h"
#include "store/refunds.h"
#include "store/cases.h"
#include "store/resolution.h"
#include "store/settlement.h"
#include "util/log.h"

namespace payorch::http {
namespace {

namespace bhttp = boost::beast::http;

constexpr std::string_view cases_path = "/v1/reconciliation";
constexpr std::string_view admin_prefix = "/v1/admin/";
constexpr std::string_view admin_payments_path = "/v1/admin/payments/";
constexpr std::string_view admin_refunds_path = "/v1/admin/refunds/";
constexpr std::string_view admin_timeline_path = "/v1/admin/timeline";
constexpr std::size_t max_note = 2000;
constexpr std::size_t max_vendor_reference = 255;


// "rc_…" / "pay_…" / "re_…" of a sane length; anything else cannot name a row, so it is a 404 (or an
// invalid cursor) without a database lookup.
bool valid_id(std::string_view s, std::string_view prefix) {
  return s.size() > prefix.size() && s.starts_with(prefix) && is_id_text(s, 64);
}

bool printable(std::string_view s) {
  for (char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

Response not_found(std::string detail, unsigned v) {
  return make_problem(Problem::not_found, std::move(detail), {}, v);
}

// The writer's verdict on a job that did not commit.
Response write_failed(store::WriteStatus status, const std::string& error, std::string_view what,
                      unsigned v) {
  if (not_committed_problem(status) == Problem::storage_unavailable)
    log::error("admin.not_recorded", error, {{"what", what}, {"status", store::to_string(status)}});
  return not_committed(status,
                       {.busy = "database busy; nothing was changed, retry",
                        .stopped = "payorchd is draining; nothing was changed",
                        .unavailable = "storage error; nothing was changed, retry"},
                       v);
}

// Validates the resolve body (docs/contract.md §6). An unknown field is refused by name: a typo must never
// silently drop part of an operator's decision.
std::variant<store::Resolution, Response> parse_resolution(const Request& req, std::string by) {
  const unsigned v = req.version();
  if (media_type(req[bhttp::field::content_type]) != "application/json")
    return make_problem(Problem::unsupported_media_type, "Content-Type must be application/json", {}, v);
  auto parsed = parse_strict_json(req.body());
  if (auto* e = std::get_if<StrictJsonError>(&parsed))
    return make_problem(Problem::invalid_json, "the body was refused: " + e->message, {}, v);
  const boost::json::value& body = std::get<StrictJson>(parsed).root;
  if (!body.is_object()) return make_problem(Problem::invalid_json, "the body must be a JSON object", {}, v);

  store::Resolution r;
  r.by = std::move(by);
  r.request_id = origin_of(req).request_id;
  std::vector<FieldError> errs;
  bool has_outcome = false, has_note = false;
  for (const auto& kv : body.as_object()) {
    const std::string key(kv.key());
    const boost::json::value& val = kv.value();
    if (key == "outcome") {
      has_outcome = true;
      auto o = val.is_string() ? store::parse_resolution_outcome(val.as_string()) : std::nullopt;
      if (o) r.outcome = *o;
      else errs.push_back({key, "invalid_value", "outcome must be succeeded, failed_final or retry"});
    } else if (key == "note") {
      has_note = true;
      if (!val.is_string() || val.as_string().find_first_not_of(" \t\r\n") == boost::json::string::npos)
        errs.push_back({key, "required", "note must be a non-empty string saying why"});
      else if (val.as_string().size() > max_note)
        errs.push_back({key, "too_long", "note must be at most 2000 bytes"});
      else
        r.note = std::string(val.as_string());
    } else if (key == "vendor_reference") {
      if (val.is_null()) continue;
      if (!val.is_string() || val.as_string().empty() || val.as_string().size() > max_vendor_reference ||
          !printable(val.as_string()))
        errs.push_back({key, "invalid_format", "vendor_reference must be 1-255 printable characters"});
      else
        r.vendor_reference = std::string(val.as_string());
    } else {
      errs.push_back({key, "unknown_field", "unknown field"});
    }
  }
  if (!has_outcome) errs.push_back({"outcome", "required", "outcome is required"});
  if (!has_note) errs.push_back({"note", "required", "note is required: say why"});

  if (!errs.empty()) return invalid_request("invalid resolution", errs, v);
  return r;
}

boost::json::object summary_json(const std::string& provider, const store::ImportSummary& s) {
  boost::json::array errors;
  for (const auto& e : s.errors) errors.push_back(boost::json::object{{"line", e.line}, {"message", e.message}});
  boost::json::array unmatched;
  for (const auto& r : s.unmatched_references) unmatched.push_back(boost::json::string(r));
  return boost::json::object{{"provider", provider},
                             {"rows", s.rows},
                             {"resolved", s.resolved},
                             {"mismatched", s.mismatched},
                             {"unmatched", s.unmatched},
                             {"unmatched_references", std::move(unmatched)},
                             {"confirmed", s.confirmed},
                             {"contradictions", s.contradictions},
                             {"finalized", s.finalized},
                             {"errors", std::move(errors)}};
}

}  // namespace

boost::json::object case_view(const store::ReconciliationCase& c) {
  boost::json::object v;
  v["id"] = c.id;
  // All three are null for a case no payment matched (a callback naming an unknown client_key).
  // A refund's case names the refunded payment, the refund, and the refund's operation_id.
  v["payment_id"] = json_or_null(c.payment_id);
  v["refund_id"] = json_or_null(c.refund_id);
  v["operation_id"] = json_or_null(c.operation_id);
  v["tenant_id"] = json_or_null(c.tenant_id);
  v["provider"] = c.provider;
  v["reason"] = c.reason;
  v["status"] = to_string(c.status);
  v["opened_at"] = format_rfc3339(c.opened_at);
  v["resolved_at"] = c.resolved_at ? boost::json::value(format_rfc3339(*c.resolved_at)) : nullptr;
  if (c.status == store::CaseStatus::resolved) {
    v["resolution"] = boost::json::object{{"outcome", json_or_null(c.outcome)},
                                          {"vendor_reference", json_or_null(c.vendor_reference)},
                                          {"note", json_or_null(c.note)},
                                          {"by", json_or_null(c.resolved_by)}};
  } else {
    v["resolution"] = nullptr;
  }
  v["evidence"] = c.evidence;
  return v;
}

boost::json::object admin_payment_view(const Payment& p) {
  boost::json::object v = payment_view(p);
  v["tenant_id"] = p.tenant_id;
  return v;
}

boost::json::object admin_refund_view(const Payment& row) {
  boost::json::object v = refund_view(as_refund(row));
  v["tenant_id"] = row.tenant_id;
  return v;
}

AdminApi::AdminApi(const config::Config& config, store::Store& store,
                   const Clock& clock, Random& rng)
    : config_(config), store_(store), clock_(clock), rng_(rng), auth_(config) {
  for (const auto& p : config.providers) contracts_[p.name] = config::contract_of(p, config.engine);
}

bool AdminApi::owns(std::string_view path) {
  return path == cases_path || (path.starts_with(cases_path) && path[cases_path.size()] == '/') ||
         path.starts_with(admin_prefix);
}

std::optional<Response> AdminApi::screen(const Request& header) {
  if (auth_.is_admin(header[bhttp::field::authorization])) return std::nullopt;
  return unauthorized("the admin bearer token is required", "payorch-admin", header.version());
}

void AdminApi::handle(Request&& req, Responder done) {
  const unsigned v = req.version();
  boost::urls::result<boost::urls::url_view> url = boost::urls::parse_origin_form(req.target());
  if (!url) return done(make_problem(Problem::bad_request, "malformed request target", {}, v));
  // Who is asking is the token's operator. Payorch-Operator is no longer taken as the author;
  // naming someone else in it is refused rather than silently overridden.
  const std::optional<std::string> who = auth_.admin_operator(req[bhttp::field::authorization]);
  if (!who) return done(unauthorized("the admin bearer token is required", "payorch-admin", v));
  if (auto it = req.find("Payorch-Operator"); it != req.end() && it->value() != *who)
    return done(make_problem(Problem::operator_mismatch,
                             "Payorch-Operator does not name the operator whose token was sent; "
                             "leave it out: the token says who you are",
                             {}, v));
  const std::string path = url->path();
  const auto method = req.method();
  try {
    if (path == cases_path) {
      if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
      return done(list_cases(req, url->params()));
    }
    if (path == admin_payments_path.substr(0, admin_payments_path.size() - 1)) {
      if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
      return done(find_payments(req, url->params()));
    }
    if (path == admin_timeline_path) {
      if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
      return done(timeline(req, url->params()));
    }
    if (path.starts_with(admin_payments_path)) {
      if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
      return done(show_payment(req, path.substr(admin_payments_path.size())));
    }
    if (path.starts_with(admin_refunds_path)) {
      if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
      return done(show_refund(req, path.substr(admin_refunds_path.size()), url->params()));
    }
    if (!path.starts_with(std::string(cases_path) + "/")) return done(not_found("no such resource", v));
    const std::string rest = path.substr(cases_path.size() + 1);
    if (rest == "import") {
      if (method != bhttp::verb::post) return done(method_not_allowed("POST", v));
      return import(req, url->params(), *who, std::move(done));
    }
    constexpr std::string_view resolve_suffix = "/resolve";
    if (rest.ends_with(resolve_suffix)) {
      if (method != bhttp::verb::post) return done(method_not_allowed("POST", v));
      return resolve(req, rest.substr(0, rest.size() - resolve_suffix.size()), *who, std::move(done));
    }
    if (rest.find('/') != std::string::npos) return done(not_found("no such resource", v));
    if (method != bhttp::verb::get) return done(method_not_allowed("GET", v));
    return done(show_case(req, rest));
  } catch (const std::exception& e) {
    return done(request_failed(e, path, req.method_string(), "storage error; retry", v));
  }
}

Response AdminApi::list_cases(const Request& req, boost::urls::params_view query) const {
  const unsigned v = req.version();
  std::optional<store::CaseStatus> status;
  std::vector<FieldError> errs;
  auto case_cursor = [](std::string_view c) { return valid_id(c, "rc_"); };
  const PageQuery page_query =
      parse_list_query(query, {case_cursor}, errs, [&](std::string_view key, const std::string& value) {
        if (key != "status") return false;
        status = store::parse_case_status(value);
        if (!status) errs.push_back({std::string(key), "invalid_format", "status must be open or resolved"});
        return true;
      });
  if (!errs.empty()) return invalid_request("invalid query parameters", errs, v);
  auto page = store_.read_value([&](store::Tx& tx) {
    return tx.list_cases(status, page_query.limit, page_query.cursor);
  });
  boost::json::array data;
  for (const auto& c : page.cases) data.push_back(case_view(c));
  boost::json::object body{{"data", std::move(data)}};
  body["next_cursor"] = page.next_cursor ? boost::json::value(*page.next_cursor) : nullptr;
  // Rows of this page that cannot be read back are named, not served (the store logged each).
  boost::json::array unreadable;
  for (const auto& u : page.unreadable)
    unreadable.push_back(boost::json::object{{"id", valid_utf8(u.id) ? u.id : std::string()}, {"detail", u.detail}});
  body["unreadable"] = std::move(unreadable);
  return make_json(200, body, v);
}

std::vector<std::string> AdminApi::tenants_asked(const std::optional<std::string>& tenant_id) const {
  // An operation_id is unique per tenant only: without tenant_id, every configured tenant's.
  if (tenant_id) return {*tenant_id};
  std::vector<std::string> tenants;
  for (const auto& t : config_.tenants) tenants.push_back(t.id);
  return tenants;
}

std::optional<std::string> AdminApi::retry_refusal_now(const store::ReconciliationCase& c,
                                                       const std::optional<Payment>& row) const {
  const auto it = contracts_.find(c.provider);
  return store::retry_refusal(c, row ? &*row : nullptr, it == contracts_.end() ? nullptr : &it->second,
                              clock_.now_ms());
}

Response AdminApi::show_case(const Request& req, const std::string& case_id) const {
  if (!valid_id(case_id, "rc_")) return not_found("no such reconciliation case", req.version());
  struct Shown {
    store::ReconciliationCase c;
    std::optional<Payment> row;  // the payment or refund the case is about
  };
  auto shown = store_.read_value([&](store::Tx& tx) -> std::optional<Shown> {
    auto c = tx.find_case(case_id);
    if (!c) return std::nullopt;
    std::optional<Payment> row;
    if (const auto& id = store::case_row_id(*c)) row = tx.find_payment_by_id(*id);
    return Shown{std::move(*c), std::move(row)};
  });
  if (!shown) return not_found("no such reconciliation case", req.version());
  boost::json::object body = case_view(shown->c);
  // What a resolution may say now (the console offers only these): succeeded and failed_final
  // always; retry only while resolve would take it — a payment that is not terminal, of a
  // configured provider, whose key the vendor still retains (store::retry_refusal).
  boost::json::array allowed;
  boost::json::value retry_refused = nullptr;
  if (shown->c.status == store::CaseStatus::open) {
    allowed = {"succeeded", "failed_final"};
    if (auto why = retry_refusal_now(shown->c, shown->row)) retry_refused = *why;
    else allowed.push_back("retry");
  }
  body["allowed_outcomes"] = std::move(allowed);
  body["retry_refused"] = std::move(retry_refused);
  return make_json(200, body, req.version());
}

Response AdminApi::show_payment(const Request& req, const std::string& payment_id) const {
  if (!valid_id(payment_id, "pay_")) return not_found("no such payment", req.version());
  struct Shown {
    Payment payment;
    std::vector<Payment> refunds;
  };
  auto shown = store_.read_value([&](store::Tx& tx) -> std::optional<Shown> {
    auto p = tx.find_payment_by_id(payment_id);
    if (!p) return std::nullopt;
    std::vector<Payment> refunds = tx.list_refunds(p->id);
    return Shown{std::move(*p), std::move(refunds)};
  });
  if (!shown) return not_found("no such payment", req.version());
  boost::json::object body = admin_payment_view(shown->payment);
  boost::json::array refunds;
  for (const Payment& row : shown->refunds) refunds.push_back(refund_view(as_refund(row)));
  body["refunds"] = std::move(refunds);
  return make_json(200, body, req.version());
}

Response AdminApi::find_payments(const Request& req, boost::urls::params_view query) const {
  const unsigned v = req.version();
  std::optional<std::string> operation_id;
  std::optional<std::string> tenant_id;
  std::vector<FieldError> errs;
  for (auto param : query) {
    if (param.key == "operation_id") {
      if (!param.has_value || !valid_operation_id(param.value))
        errs.push_back({"operation_id", "invalid_format", "operation_id must be an operation_id"});
      else operation_id = std::string(param.value);
    } else if (param.key == "tenant_id") {
      if (!param.has_value || !is_name(param.value))
        errs.push_back({"tenant_id", "invalid_format", "tenant_id must be a tenant id"});
      else tenant_id = std::string(param.value);
    } else {
      errs.push_back({std::string(param.key), "unknown_field", "unknown query parameter"});
    }
  }
  if (!operation_id && errs.empty()) errs.push_back({"operation_id", "required", "operation_id is required"});
  if (!errs.empty()) return invalid_request("invalid query parameters", errs, v);
  const std::vector<std::string> tenants = tenants_asked(tenant_id);
  auto found = store_.read_value([&](store::Tx& tx) {
    std::vector<Payment> out;
    for (const auto& t : tenants)
      if (auto p = tx.find_payment_by_operation(t, "payment", *operation_id)) out.push_back(std::move(*p));
    return out;
  });
  boost::json::array payments;
  for (const Payment& p : found) payments.push_back(admin_payment_view(p));
  return make_json(200, boost::json::object{{"payments", std::move(payments)}}, v);
}

Response AdminApi::show_refund(const Request& req, const std::string& refund_id,
                               boost::urls::params_view query) const {
  const unsigned v = req.version();
  // With ?tenant_id=T the path names that tenant's refund by operation_id: an operation_id is
  // unique per tenant only.
  std::optional<std::string> tenant_id;
  std::vector<FieldError> errs;
  for (auto param : query) {
    if (param.key != "tenant_id") errs.push_back({std::string(param.key), "unknown_field", "unknown query parameter"});
    else if (!param.has_value || !is_name(param.value))
      errs.push_back({std::string(param.key), "invalid_format", "tenant_id must be a tenant id"});
    else tenant_id = std::string(param.value);
  }
  if (!errs.empty()) return invalid_request("invalid query parameters", errs, v);
  if (!tenant_id && !valid_id(refund_id, "re_")) return not_found("no such refund", v);
  if (tenant_id && !valid_operation_id(refund_id)) return not_found("no such refund", v);
  auto row = store_.read_value([&](store::Tx& tx) {
    return tenant_id ? tx.find_refund(*tenant_id, refund_id) : tx.find_payment_by_id(refund_id);
  });
  // A payment's id is not a refund's: only refund rows are shown here.
  if (!row || !row->refund_of) return not_found("no such refund", v);
  return make_json(200, admin_refund_view(*row), v);
}

Response AdminApi::timeline(const Request& req, boost::urls::params_view query) const {
  const unsigned v = req.version();
  std::optional<std::string> id, operation_id, client_key, tenant_id;
  std::vector<FieldError> errs;
  for (auto param : query) {
    const std::string key = param.key;
    const std::string_view value = param.has_value ? std::string_view(param.value) : std::string_view();
    if (key == "id") {
      if (!valid_id(value, "pay_") && !valid_id(value, "re_"))
        errs.push_back({key, "invalid_format", "id must be a payment's (pay_…) or a refund's (re_…) id"});
      else id = std::string(value);
    } else if (key == "operation_id") {
      if (!valid_operation_id(value))
        errs.push_back({key, "invalid_format", "operation_id must be an operation_id"});
      else operation_id = std::string(value);
    } else if (key == "client_key") {
      if (!valid_id(value, "ck_")) errs.push_back({key, "invalid_format", "client_key must be a client_key (ck_…)"});
      else client_key = std::string(value);
    } else if (key == "tenant_id") {
      if (!is_name(value)) errs.push_back({key, "invalid_format", "tenant_id must be a tenant id"});
      else tenant_id = std::string(value);
    } else {
      errs.push_back({key, "unknown_field", "unknown query parameter"});
    }
  }
  if (errs.empty()) {
    const int selectors = int{id.has_value()} + int{operation_id.has_value()} + int{client_key.has_value()};
    if (selectors == 0)
      errs.push_back({"id", "required", "one of id, operation_id or client_key is required"});
    else if (selectors > 1)
      errs.push_back({id ? "id" : "operation_id", "invalid_format",
                      "name one of id, operation_id or client_key, not several"});
    else if (tenant_id && !operation_id)
      errs.push_back({"tenant_id", "invalid_format", "tenant_id goes with operation_id only"});
  }
  if (!errs.empty()) return invalid_request("invalid query parameters", errs, v);

  auto rows = store_.read_value([&](store::Tx& tx) {
    std::vector<Payment> found;
    if (id) {
      // A pay_ id names a payment row only, a re_ id a refund row only.
      auto row = tx.find_payment_by_id(*id);
      if (row && row->refund_of.has_value() == id->starts_with("re_")) found.push_back(std::move(*row));
    } else if (operation_id) {
      // Unique per tenant and operation type: each tenant's payment and refund.
      for (const auto& t : tenants_asked(tenant_id))
        for (const char* type : {"payment", "refund"})
          if (auto row = tx.find_payment_by_operation(t, type, *operation_id)) found.push_back(std::move(*row));
    } else {
      // client_key is unique per provider (and random: one row in practice).
      for (const auto& p : config_.providers)
        if (auto row = tx.find_payment_by_client_key(p.name, *client_key)) found.push_back(std::move(*row));
    }
    std::vector<TimelineRow> out;
    for (Payment& row : found) out.push_back(read_timeline_row(tx, std::move(row)));
    return out;
  });
  boost::json::array matches;
  for (const TimelineRow& r : rows) matches.push_back(timeline_match(r));
  return make_json(200, boost::json::object{{"matches", std::move(matches)}}, v);
}

void AdminApi::resolve(const Request& req, const std::string& case_id, const std::string& by,
                       Responder done) {
  const unsigned v = req.version();
  if (!valid_id(case_id, "rc_")) return done(not_found("no such reconciliation case", v));
  auto parsed = parse_resolution(req, by);
  if (auto* refusal = std::get_if<Response>(&parsed)) return done(std::move(*refusal));

  struct Job {
    std::string case_id;
    store::Resolution resolution;
    std::optional<store::ResolveResult> result;
  };
  auto job = std::make_shared<Job>(Job{case_id, std::get<store::Resolution>(std::move(parsed)), {}});
  store_.submit(
      [job, this](store::Tx& tx) {
        job->result.reset();  // the work may run again after a busy retry
        Contract contract;    // read by retry, and by failed_final (a confirmed close)
        if (job->resolution.outcome == store::ResolutionOutcome::failed_final) {
          auto c = tx.find_case(job->case_id);
          auto it = c ? contracts_.find(c->provider) : contracts_.end();
          if (it != contracts_.end()) contract = it->second;
        } else if (job->resolution.outcome == store::ResolutionOutcome::retry) {
          auto c = tx.find_case(job->case_id);
          auto it = c ? contracts_.find(c->provider) : contracts_.end();
          // resolve_case applies the whole rule with the contract it is given: a provider no
          // longer configured has none to give, so that refusal is made here, by the same rule.
          if (c && c->status == store::CaseStatus::open && it == contracts_.end()) {
            std::optional<Payment> row;
            if (const auto& id = store::case_row_id(*c)) row = tx.find_payment_by_id(*id);
            job->result = store::ResolveRefusal{
                store::ResolveRefusal::Code::retry_not_allowed,
                *store::retry_refusal(*c, row ? &*row : nullptr, nullptr, clock_.now_ms())};
            return;
          }
          if (it != contracts_.end()) contract = it->second;
        }
        job->result = tx.resolve_case(job->case_id, job->resolution, contract,
                                          clock_.now_ms(), rng_);
      },
      [this, job, v, done = std::move(done)](store::WriteStatus status, const std::string& error) {
        if (status != store::WriteStatus::committed || !job->result)
          return done(write_failed(status, error, "resolution of " + job->case_id, v));
        // Crash point: committed, not yet answered. Resolving again answers 409 case-not-open
        // and the case view shows the resolution that was recorded.
        if (auto* r = std::get_if<store::Resolved>(&*job->result)) {
          log::info("admin.case_resolved", "a reconciliation case was resolved by an operator",
                    {{"case_id", job->case_id},
                     {"payment_id", r->payment ? r->payment->id : std::string()},
                     {"client_key", r->payment ? r->payment->client_key : std::string()},
                     {"outcome", store::to_string(job->resolution.outcome)},
                     {"by", job->resolution.by},
                     {"state", r->payment ? std::string(to_string(r->payment->state)) : std::string()}});
          // The row the case was about, as it is now: a payment, or a refund (docs/refunds.md).
          boost::json::object body{{"case", case_view(r->resolved_case)}, {"payment", nullptr}, {"refund", nullptr}};
          if (r->payment) {
            if (on_change_) on_change_(r->payment->id);
            if (r->payment->refund_of) body["refund"] = admin_refund_view(*r->payment);
            else body["payment"] = admin_payment_view(*r->payment);
          }
          return done(make_json(200, body, v));
        }
        const auto& refusal = std::get<store::ResolveRefusal>(*job->result);
        switch (refusal.code) {
          case store::ResolveRefusal::Code::case_not_found: return done(not_found(refusal.detail, v));
          case store::ResolveRefusal::Code::case_not_open:
            return done(make_problem(Problem::case_not_open, refusal.detail, {}, v));
          case store::ResolveRefusal::Code::retry_not_allowed:
            return done(make_problem(Problem::retry_not_allowed, refusal.detail, {}, v));
        }
      });
}

void AdminApi::import(const Request& req, boost::urls::params_view query, const std::string& by,
                      Responder done) {
  const unsigned v = req.version();
  std::optional<std::string> provider;
  std::vector<FieldError> errs;
  for (auto param : query) {
    const std::string key = param.key;
    if (key != "provider") {
      errs.push_back({key, "unknown_field", "unknown query parameter"});
      continue;
    }
    provider = param.has_value ? std::string(param.value) : std::string();
    if (!config_.find_provider(*provider))
      errs.push_back({key, "unknown_provider", "no provider named '" + *provider + "'"});
  }
  if (!provider) errs.push_back({"provider", "required", "provider=NAME is required"});
  if (!errs.empty()) return done(invalid_request("invalid query parameters", errs, v));
  if (media_type(req[bhttp::field::content_type]) != "text/csv")
    return done(make_problem(Problem::unsupported_media_type, "Content-Type must be text/csv", {}, v));

  // Parsed here, off the writer thread; the writer only applies the rows.
  auto file = std::make_shared<store::SettlementFile>(store::parse_settlement(req.body()));
  if (file->header_error) return done(make_problem(Problem::invalid_settlement_file, *file->header_error, {}, v));
  auto summary = std::make_shared<store::ImportSummary>();
  store_.submit(
      [file, summary, provider = *provider, by, this](store::Tx& tx) {
        *summary = tx.import_settlement(provider, *file, by, clock_.now_ms(), rng_);
      },
      [this, summary, provider = *provider, by, v, done = std::move(done)](store::WriteStatus status,
                                                                            const std::string& error) {
        if (status != store::WriteStatus::committed)
          return done(write_failed(status, error, "settlement import for " + provider, v));
        if (on_change_)
          for (const auto& id : summary->changed_payments) on_change_(id);
        log::info("admin.settlement_imported", "a vendor settlement file was applied",
                  {{"provider", provider},
                   {"by", by},
                   {"rows", summary->rows},
                   {"resolved", summary->resolved},
                   {"mismatched", summary->mismatched},
                   {"unmatched", summary->unmatched},
                   {"contradictions", summary->contradictions},
                   {"errors", static_cast<std::uint64_t>(summary->errors.size())}});
        return done(make_json(200, summary_json(provider, *summary), v));
      });
}

}  // namespace payorch::http
