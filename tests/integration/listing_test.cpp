// GET /v1/payments: the tenant's payments newest first, paged with next_cursor until null, with
// no duplicates or omissions, filtered by state, and nothing of another tenant's.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/http_client.h"
#include "support/payorch_api.h"

using namespace payorch::test;

namespace {

HttpResponse list(std::uint16_t port, std::string_view token, const std::string& query) {
  return http_request(port, "GET", "/v1/payments" + query,
                      {{"Authorization", "Bearer " + std::string(token)}});
}

// Follows next_cursor from `query` to the end; returns the ids in the order served.
std::vector<std::string> list_all(std::uint16_t port, std::string_view token,
                                  const std::string& query, std::size_t page_limit,
                                  std::size_t max_pages = 50) {
  std::vector<std::string> ids;
  std::string cursor;
  for (std::size_t page = 0; page < max_pages; ++page) {
    CAPTURE(page);
    std::string q = query;
    if (!cursor.empty()) q += "&cursor=" + cursor;
    const HttpResponse r = list(port, token, q);
    REQUIRE_MESSAGE(r.status == 200, r.describe());
    CHECK(r.header("content-type").rfind("application/json", 0) == 0);
    const auto body = r.json();
    REQUIRE(body.is_object());
    REQUIRE(body.as_object().contains("data"));
    REQUIRE(body.as_object().contains("next_cursor"));
    const auto& data = body.at("data").as_array();
    CHECK(data.size() <= page_limit);
    for (const auto& view : data) {
      CHECK(view.as_object().contains("client_key"));
      ids.push_back(json_string(view, "id"));
    }
    const auto& next = body.at("next_cursor");
    if (next.is_null()) return ids;
    REQUIRE(next.is_string());
    REQUIRE_MESSAGE(!next.get_string().empty(), "next_cursor is an empty string, not null");
    CHECK_MESSAGE(!data.empty(), "a page with no data still has a next_cursor");
    cursor = std::string(next.get_string());
  }
  FAIL("next_cursor never became null after " << max_pages << " pages");
  return ids;
}

}  // namespace

TEST_CASE("listing: pages newest first until next_cursor is null, per tenant, by state") {
  Daemon daemon;
  daemon.start();
  INFO("payorchd log:\n" << daemon.log_tail());

  constexpr int acme_count = 7;
  std::vector<std::string> acme_ids;
  for (int i = 0; i < acme_count; ++i) {
    const PaymentRequest req{.operation_id = "list-" + std::to_string(i), .amount_minor = 10 + i};
    const HttpResponse r = post_payment(daemon.port(), acme_token, req);
    REQUIRE_MESSAGE(r.status == 201, r.describe());
    acme_ids.push_back(json_string(r.json(), "id"));
  }
  const HttpResponse globex_created =
      post_payment(daemon.port(), globex_token, PaymentRequest{.operation_id = "list-0"});
  REQUIRE_MESSAGE(globex_created.status == 201, globex_created.describe());
  const std::string globex_id = json_string(globex_created.json(), "id");

  // ULIDs sort by creation time: newest first is descending id order.
  std::vector<std::string> expected = acme_ids;
  std::sort(expected.rbegin(), expected.rend());

  {
    INFO("limit=2 pages through all of acme's, newest first");
    const auto ids = list_all(daemon.port(), acme_token, "?limit=2", 2);
    CHECK(ids == expected);
    CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == ids.size());
    // The most recent intake of acme's is first.
    REQUIRE(!ids.empty());
    CHECK(ids.front() == *std::max_element(acme_ids.begin(), acme_ids.end()));
  }
  {
    INFO("limit=1 and a large page agree");
    CHECK(list_all(daemon.port(), acme_token, "?limit=1", 1) == expected);
    CHECK(list_all(daemon.port(), acme_token, "?limit=100", 100) == expected);
  }
  {
    INFO("state filter");
    CHECK(list_all(daemon.port(), acme_token, "?state=PROCESSING&limit=3", 3) == expected);
    CHECK(list_all(daemon.port(), acme_token, "?state=SUCCEEDED&limit=3", 3).empty());
    CHECK(list_all(daemon.port(), acme_token, "?state=FAILED_FINAL&limit=3", 3).empty());
    const HttpResponse bogus = list(daemon.port(), acme_token, "?state=BOGUS");
    CHECK_MESSAGE((is_problem(bogus, 422, "invalid-request") || bogus.status == 400),
                  bogus.describe());
  }
  {
    INFO("another tenant sees only its own");
    const auto ids = list_all(daemon.port(), globex_token, "?limit=2", 2);
    CHECK(ids == std::vector<std::string>{globex_id});
  }
  {
    INFO("limit out of range or malformed is a problem");
    for (const char* query : {"?limit=0", "?limit=-1", "?limit=abc", "?limit=1000000"}) {
      CAPTURE(query);
      const HttpResponse r = list(daemon.port(), acme_token, query);
      CHECK_MESSAGE((r.status == 400 || r.status == 422), r.describe());
      CHECK_MESSAGE(problem_type(r).rfind("not a problem", 0) != 0, problem_type(r));
    }
    const HttpResponse garbage_cursor =
        list(daemon.port(), acme_token, "?limit=2&cursor=%%%garbage");
    CHECK_MESSAGE((garbage_cursor.status == 400 || garbage_cursor.status == 422),
                  garbage_cursor.describe());
  }
  {
    INFO("no token");
    const HttpResponse r = http_request(daemon.port(), "GET", "/v1/payments");
    CHECK_MESSAGE(is_problem(r, 401, "unauthorized"), r.describe());
  }
}
