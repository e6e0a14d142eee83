#pragma once
// RFC 9457 problem details. Every error payorch answers over HTTP is built here, so the
// catalogue of `type` codes (README, "Problem types") has one home.
#include <boost/beast/http.hpp>
#include <boost/json/object.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/intent.h"

namespace payorch::http {

namespace beast_http = boost::beast::http;
using Request = beast_http::request<beast_http::string_body>;
using Response = beast_http::response<beast_http::string_body>;

inline constexpr std::string_view problem_base = "https://payorch.dev/problems/";

// Builds an application/problem+json response: {"type": problem_base + code, "title",
// "status", "detail", ...extra}. `title` defaults to a fixed title for known codes.
Response make_problem(unsigned status, std::string_view code, std::string detail,
                      boost::json::object extra = {}, unsigned http_version = 11);

// A JSON response with the given status.
Response make_json(unsigned status, const boost::json::value& body, unsigned http_version = 11);

// The fixed human title for a catalogue code ("Idempotency key reused", ...).
std::string_view problem_title(std::string_view code);

// The `errors` member of a problem — {"field","code","message"} for the first
// max_listed_errors (core/intent.h) of `errors` — and, when some were left out, `errors_omitted`: how many.
void add_field_errors(boost::json::object& extra, const std::vector<FieldError>& errors);

}  // namespace payorch::http
