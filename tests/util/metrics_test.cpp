// Metrics: counters and histograms in the Prometheus text format 0.0.4 — HELP and TYPE for
// every family, cumulative buckets ending in +Inf, _sum and _count, escaped label values —
// and names checked before they can make a scrape unreadable.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "util/metrics.h"

using namespace payorch;

TEST_CASE("metrics: counters render with HELP and TYPE, a declared family without series included") {
  Metrics m;
  m.declare_counter("payorch_things_total", "Things, by kind");
  m.declare_counter("payorch_empty_total", "Nothing yet");
  m.inc("payorch_things_total", {{"kind", "a"}});
  m.inc("payorch_things_total", {{"kind", "a"}}, 2);
  m.inc("payorch_things_total", {{"kind", "quote\"back\\slash\nnl"}});
  CHECK(m.value("payorch_things_total", {{"kind", "a"}}) == 3);
  CHECK(m.value("payorch_things_total", {{"kind", "b"}}) == 0);
  CHECK(m.total("payorch_things_total") == 4);
  CHECK(m.render() ==
        "# HELP payorch_empty_total Nothing yet\n"
        "# TYPE payorch_empty_total counter\n"
        "# HELP payorch_things_total Things, by kind\n"
        "# TYPE payorch_things_total counter\n"
        "payorch_things_total{kind=\"a\"} 3\n"
        "payorch_things_total{kind=\"quote\\\"back\\\\slash\\nnl\"} 1\n");
}

TEST_CASE("metrics: histograms count each observation in the first bucket whose bound is >= it, cumulatively") {
  Metrics m;
  m.declare_histogram("payorch_wait_seconds", "Waits", {0.1, 1, 10});
  m.observe("payorch_wait_seconds", {{"route", "/x"}}, 0.1);   // le="0.1" (bounds are inclusive)
  m.observe("payorch_wait_seconds", {{"route", "/x"}}, 0.5);
  m.observe("payorch_wait_seconds", {{"route", "/x"}}, 42);    // only +Inf
  m.observe("payorch_wait_seconds", {}, 2);
  CHECK(m.observations("payorch_wait_seconds", {{"route", "/x"}}) == 3);
  CHECK(m.observed_sum("payorch_wait_seconds", {{"route", "/x"}}) == doctest::Approx(42.6));
  CHECK(m.render() ==
        "# HELP payorch_wait_seconds Waits\n"
        "# TYPE payorch_wait_seconds histogram\n"
        "payorch_wait_seconds_bucket{le=\"0.1\"} 0\n"
        "payorch_wait_seconds_bucket{le=\"1\"} 0\n"
        "payorch_wait_seconds_bucket{le=\"10\"} 1\n"
        "payorch_wait_seconds_bucket{le=\"+Inf\"} 1\n"
        "payorch_wait_seconds_sum 2\n"
        "payorch_wait_seconds_count 1\n"
        "payorch_wait_seconds_bucket{route=\"/x\",le=\"0.1\"} 1\n"
        "payorch_wait_seconds_bucket{route=\"/x\",le=\"1\"} 2\n"
        "payorch_wait_seconds_bucket{route=\"/x\",le=\"10\"} 2\n"
        "payorch_wait_seconds_bucket{route=\"/x\",le=\"+Inf\"} 3\n"
        "payorch_wait_seconds_sum{route=\"/x\"} 42.600000000000001\n"
        "payorch_wait_seconds_count{route=\"/x\"} 3\n");
}

TEST_CASE("metrics: an undeclared histogram gets the default latency buckets") {
  Metrics m;
  m.observe("payorch_latency_seconds", {}, 0.003);
  const std::string text = m.render();
  CHECK(text.find("payorch_latency_seconds_bucket{le=\"0.0025\"} 0\n") != std::string::npos);
  CHECK(text.find("payorch_latency_seconds_bucket{le=\"0.005\"} 1\n") != std::string::npos);
  CHECK(text.find("payorch_latency_seconds_bucket{le=\"10\"} 1\n") != std::string::npos);
}

TEST_CASE("metrics: invalid names, label names and type clashes are refused") {
  Metrics m;
  CHECK(valid_metric_name("payorch_http_requests_total"));
  CHECK(valid_metric_name("a:b_c9"));
  CHECK(!valid_metric_name("9lives"));
  CHECK(!valid_metric_name("has-dash"));
  CHECK(!valid_metric_name(""));
  CHECK(valid_label_name("route"));
  CHECK(!valid_label_name("__reserved"));
  CHECK(!valid_label_name("a:b"));
  CHECK_THROWS_AS(m.declare_counter("bad name_total", "x"), std::logic_error);
  CHECK_THROWS_AS(m.inc("payorch_ok_total", {{"bad-label", "x"}}), std::logic_error);
  CHECK_THROWS_AS(m.observe("payorch_h_seconds", {{"le", "1"}}, 1), std::logic_error);
  m.declare_counter("payorch_c_total", "c");
  CHECK_THROWS_AS(m.observe("payorch_c_total", {}, 1), std::logic_error);
  CHECK_THROWS_AS(m.declare_histogram("payorch_h2_seconds", "h", {1, 0.5}), std::logic_error);
  // A refused series leaves nothing behind that would render.
  CHECK(m.render().find("bad") == std::string::npos);
}

TEST_CASE("metrics: gauges render with HELP and TYPE") {
  CHECK(render_gauge("payorch_open", "Open things", {{{{"reason", "r"}}, 2}, {{}, 0.5}}) ==
        "# HELP payorch_open Open things\n# TYPE payorch_open gauge\n"
        "payorch_open{reason=\"r\"} 2\npayorch_open 0.5\n");
}

TEST_CASE("metrics: collectors render after the kept families, at every scrape, and an empty gauge has no sample") {
  Metrics m;
  m.declare_counter("payorch_things_total", "Things");
  int scrapes = 0;
  m.add_collector([&scrapes] {
    ++scrapes;
    return render_gauge("payorch_scrapes", "Scrapes so far", {{{}, static_cast<double>(scrapes)}});
  });
  m.add_collector([] { return render_gauge("payorch_oldest_age_seconds", "None now", {}); });
  const std::string expected_tail =
      "# HELP payorch_oldest_age_seconds None now\n"
      "# TYPE payorch_oldest_age_seconds gauge\n";
  CHECK(m.render() ==
        "# HELP payorch_things_total Things\n"
        "# TYPE payorch_things_total counter\n"
        "# HELP payorch_scrapes Scrapes so far\n"
        "# TYPE payorch_scrapes gauge\n"
        "payorch_scrapes 1\n" +
            expected_tail);
  CHECK(m.render().find("payorch_scrapes 2\n") != std::string::npos);
}
