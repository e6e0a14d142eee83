#include "http/problem.h"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

namespace payorch::http {

std::optional<Problem> problem_of_code(std::string_view code) {
  for (const auto& type : problem_catalogue)
    if (type.code == code) return type.problem;
  return std::nullopt;
}

Response make_json(unsigned status, const boost::json::value& body, unsigned http_version) {
  Response res{static_cast<beast_http::status>(status), http_version};
  res.set(beast_http::field::content_type, "application/json");
  res.set(beast_http::field::cache_control, "no-store");
  res.body() = boost::json::serialize(body);
  res.prepare_payload();
  return res;
}

Response make_text(unsigned status, std::string body, unsigned http_version) {
  Response res{static_cast<beast_http::status>(status), http_version};
  res.set(beast_http::field::content_type, "text/plain; charset=utf-8");
  res.set(beast_http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

Response make_problem(Problem problem, std::string detail, boost::json::object extra,
                      unsigned http_version) {
  const ProblemType& type = problem_type(problem);
  boost::json::object body;
  body["type"] = std::string(problem_base) + std::string(type.code);
  body["title"] = type.title;
  body["status"] = type.status;
  body["detail"] = std::move(detail);
  for (auto& kv : extra) body[kv.key()] = std::move(kv.value());
  Response res = make_json(type.status, body, http_version);
  res.set(beast_http::field::content_type, "application/problem+json");
  if (type.retry_after_s > 0) res.set(beast_http::field::retry_after, std::to_string(type.retry_after_s));
  return res;
}

Response method_not_allowed(std::string_view allow, unsigned http_version) {
  Response r = make_problem(Problem::method_not_allowed, "allowed: " + std::string(allow), {}, http_version);
  r.set(beast_http::field::allow, allow);
  return r;
}

Response unauthorized(std::string detail, std::string_view realm, unsigned http_version) {
  Response r = make_problem(Problem::unauthorized, std::move(detail), {}, http_version);
  r.set(beast_http::field::www_authenticate, "Bearer realm=\"" + std::string(realm) + "\"");
  return r;
}

void add_field_errors(boost::json::object& extra, const std::vector<FieldError>& errors) {
  boost::json::array list;
  for (std::size_t i = 0; i < errors.size() && i < max_listed_errors; ++i)
    list.push_back(boost::json::object{{"field", errors[i].field}, {"code", errors[i].code}, {"message", errors[i].message}});
  extra["errors"] = std::move(list);
  if (errors.size() > max_listed_errors) extra["errors_omitted"] = errors.size() - max_listed_errors;
}

Response invalid_request(std::string detail, const std::vector<FieldError>& errors,
                         unsigned http_version) {
  boost::json::object extra;
  add_field_errors(extra, errors);
  return make_problem(Problem::invalid_request, std::move(detail), std::move(extra), http_version);
}

}  // namespace payorch::http
