// The monitoring shipped with payorch (docs/monitoring.md): conf/prometheus/payorch-alerts.yml
// passes `promtool check rules` and its unit tests (payorch-alerts.test.yml);
// conf/grafana/payorch-dashboard.json is a dashboard whose every panel queries the data source
// variable; and every metric the rules and the dashboard name is on a real payorchd's
// GET /metrics — with the process_* families, build info, the store's families of the driver in
// use and the watchdog's last probe, and no "oldest age" sample while nothing is open or pending.
#include <doctest/doctest.h>

#include <yaml-cpp/yaml.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/daemon.h"
#include "support/payorch_api.h"
#include "support/process.h"
#include "support/prometheus.h"

using namespace payorch::test;

namespace {

const std::string source_dir = PAYORCH_SOURCE_DIR;
const std::string alerts_file = source_dir + "/conf/prometheus/payorch-alerts.yml";
const std::string alerts_test_file = source_dir + "/conf/prometheus/payorch-alerts.test.yml";
const std::string dashboard_file = source_dir + "/conf/grafana/payorch-dashboard.json";

// promtool's answer to `args`, found on PATH (through env, which exits 127 when it is not).
CommandResult promtool(const std::vector<std::string>& args, const std::string& output_dir) {
  std::vector<std::string> argv{"/usr/bin/env", "promtool"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_to_completion(argv, output_dir + "/promtool" + args.front() + ".out", std::chrono::seconds(30));
}

// True when promtool is on PATH. Without it the promtool checks are skipped, except under CI=true
// (tools/deps installs it), where its absence fails the test.
bool promtool_available(const std::string& output_dir) {
  if (promtool({"--version"}, output_dir).status.code == 0) return true;
  const char* ci = std::getenv("CI");
  if (ci && std::string(ci) == "true") FAIL_CHECK("promtool not found on PATH (CI=true): install the prometheus package");
  else MESSAGE("promtool not found on PATH: the promtool checks are skipped (tools/deps installs it)");
  return false;
}

std::string read_text(const std::string& path) {
  const std::string text = read_file(path);
  REQUIRE_MESSAGE(!text.empty(), "cannot read " << path);
  return text;
}

// The payorch_* and process_* metric names a PromQL expression refers to.
std::set<std::string> metric_names_in(const std::string& expr) {
  static const std::regex name(R"(\b(payorch_[a-z0-9_]+|process_[a-z0-9_]+)\b)");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

std::vector<std::string> alert_expressions() {
  std::vector<std::string> out;
  const YAML::Node doc = YAML::LoadFile(alerts_file);
  for (const auto& group : doc["groups"])
    for (const auto& rule : group["rules"]) out.push_back(rule["expr"].as<std::string>());
  return out;
}

struct DashboardTarget {
  std::string panel;
  std::string expr;
};

// Every target of every panel (rows hold none), with the checks a dashboard must pass to be
// imported and show data: each panel and target queries the ${DS_PROMETHEUS} data source.
std::vector<DashboardTarget> dashboard_targets() {
  const boost::json::value doc = boost::json::parse(read_text(dashboard_file));
  const auto& dash = doc.as_object();
  CHECK(dash.at("schemaVersion").to_number<int>() >= 37);
  bool has_datasource_variable = false;
  for (const auto& v : dash.at("templating").at("list").as_array())
    if (v.at("type").as_string() == "datasource" && v.at("name").as_string() == "DS_PROMETHEUS" &&
        v.at("query").as_string() == "prometheus")
      has_datasource_variable = true;
  CHECK(has_datasource_variable);
  std::vector<DashboardTarget> out;
  std::size_t panels = 0;
  for (const auto& pv : dash.at("panels").as_array()) {
    const auto& panel = pv.as_object();
    if (panel.at("type").as_string() == "row") continue;
    ++panels;
    const std::string title(panel.at("title").as_string());
    const auto* ds = panel.if_contains("datasource");
    CHECK_MESSAGE((ds && ds->is_object() && ds->as_object().at("uid").as_string() == "${DS_PROMETHEUS}"),
                  "panel without the data source variable: " << title);
    const auto* targets = panel.if_contains("targets");
    const bool has_targets = targets && targets->is_array() && !targets->as_array().empty();
    CHECK_MESSAGE(has_targets, "panel without targets: " << title);
    if (!has_targets) continue;
    for (const auto& t : targets->as_array()) {
      const std::string expr(t.at("expr").as_string());
      CHECK_MESSAGE(!expr.empty(), "empty expression in " << title);
      CHECK_MESSAGE(t.at("datasource").at("uid").as_string() == "${DS_PROMETHEUS}", title);
      out.push_back({title, expr});
    }
  }
  CHECK(panels >= 10);
  return out;
}

// family -> its # TYPE, and the sample lines, of an exposition.
std::map<std::string, std::string> types_of(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("# TYPE ")) continue;
    const std::size_t space = line.find(' ', 7);
    out[line.substr(7, space - 7)] = line.substr(space + 1);
  }
  return out;
}

// The family a name in an expression belongs to: histogram series are named with _bucket,
// _sum and _count.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  if (types.contains(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s(suffix);
    if (name.ends_with(s)) {
      const std::string base = name.substr(0, name.size() - s.size());
      if (types.contains(base) && types.at(base) == "histogram") return base;
    }
  }
  return "";
}

bool has_sample(const std::map<std::string, double>& samples, const std::string& family) {
  for (const auto& entry : samples)
    if (entry.first == family || entry.first.starts_with(family + "{")) return true;
  return false;
}

// The anchors of docs/monitoring.md's headings, as GitHub makes them: lower case, spaces to
// hyphens, punctuation dropped.
std::set<std::string> runbook_anchors() {
  std::set<std::string> out;
  std::istringstream lines(read_text(source_dir + "/docs/monitoring.md"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("#")) continue;
    std::string anchor;
    for (char c : line.substr(line.find_first_not_of("# ")))
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')
        anchor += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      else if (c == ' ')
        anchor += '-';
    out.insert(anchor);
  }
  return out;
}

}  // namespace

TEST_CASE("monitoring: the alert rules pass promtool check rules and their own unit tests" *
          doctest::test_suite("driver-free")) {
  const TempDir dir("payorch-monitoring");
  if (!promtool_available(dir.path())) return;
  const CommandResult check = promtool({"check", "rules", alerts_file}, dir.path());
  CHECK_MESSAGE(check.status.code == 0, check.output);
  CHECK(check.output.find("SUCCESS") != std::string::npos);
  const CommandResult test = promtool({"test", "rules", alerts_test_file}, dir.path());
  CHECK_MESSAGE(test.status.code == 0, test.output);
  // Every alert has a case where it fires: an alert whose expression can never be true would
  // pass a file of quiet cases only.
  const std::string tests = read_text(alerts_test_file);
  const YAML::Node doc = YAML::LoadFile(alerts_file);
  std::size_t alerts = 0;
  for (const auto& group : doc["groups"])
    for (const auto& rule : group["rules"]) {
      ++alerts;
      const std::string name = rule["alert"].as<std::string>();
      CHECK_MESSAGE(tests.find("alertname: " + name + "\n") != std::string::npos, name << " has no unit test");
      // Conditions that must last before they page; the two about events (a restart, a failed
      // write) fire at once.
      if (!name.ends_with("Restarted") && !name.ends_with("StorageErrors"))
        CHECK_MESSAGE(rule["for"].IsDefined(), name << " has no for:");
      CHECK_MESSAGE(rule["labels"]["severity"].IsDefined(), name);
      CHECK_MESSAGE(rule["annotations"]["summary"].IsDefined(), name);
      CHECK_MESSAGE(rule["annotations"]["description"].IsDefined(), name);
      const std::string runbook = rule["annotations"]["runbook_url"].as<std::string>("");
      CHECK_MESSAGE(runbook.starts_with("docs/monitoring.md#"), name);
      CHECK_MESSAGE(runbook_anchors().contains(runbook.substr(runbook.find('#') + 1)),
                    name << ": no section of docs/monitoring.md for " << runbook);
    }
  CHECK(alerts >= 7);
}

TEST_CASE("monitoring: the dashboard imports: a data source variable, and every panel's queries parse" *
          doctest::test_suite("driver-free")) {
  const std::vector<DashboardTarget> targets = dashboard_targets();
  const TempDir dir("payorch-dashboard");
  if (!promtool_available(dir.path())) return;
  // promtool parses PromQL as it checks rules: each query, with Grafana's variables given
  // values, becomes a recording rule.
  std::string rules = "groups:\n  - name: dashboard\n    rules:\n";
  for (std::size_t i = 0; i < targets.size(); ++i) {
    std::string expr = targets[i].expr;
    for (const auto& [var, value] : {std::pair<std::string, std::string>{"$__rate_interval", "5m"}, {"$instance", ".*"}})
      for (std::size_t at; (at = expr.find(var)) != std::string::npos;) expr.replace(at, var.size(), value);
    rules += "      - record: dashboard_query_" + std::to_string(i) + "\n        expr: " +
             boost::json::serialize(boost::json::value(expr)) + "\n";
  }
  const CommandResult check = promtool({"check", "rules", dir.write("queries.yml", rules)}, dir.path());
  CHECK_MESSAGE(check.status.code == 0, check.output);
}

TEST_CASE("monitoring: every metric the alert rules and the dashboard use is on payorchd's /metrics") {
  std::set<std::string> wanted;
  for (const auto& expr : alert_expressions())
    for (const auto& n : metric_names_in(expr)) wanted.insert(n);
  for (const auto& t : dashboard_targets())
    for (const auto& n : metric_names_in(t.expr)) wanted.insert(n);
  REQUIRE(wanted.size() > 20);

  Daemon daemon;
  // As under systemd with WatchdogSec=1s: the watchdog probes the writer every 0.5 s
  // (sd_notify has no NOTIFY_SOCKET to write to, so it does nothing).
  daemon.set_env("WATCHDOG_USEC", "1000000");
  daemon.start();
  for (int i = 0; i < 3; ++i) {
    PaymentRequest req;
    req.operation_id = unique_operation_id("mon");
    const HttpResponse r = post_payment(daemon.port(), acme_token, req);
    REQUIRE_MESSAGE(r.status == 201, r.body);
  }

  // The watchdog's first probe answers within a second or so.
  std::string text;
  CHECK(eventually([&] {
    text = http_request(daemon.port(), "GET", "/metrics").body;
    return text.find("\npayorch_watchdog_last_ok_timestamp_seconds ") != std::string::npos;
  }));
  const auto types = types_of(text);
  const auto samples = samples_of(text);
  // The families only this scrape has (the watchdog's, the driver's store families) are lint
  // clean too.
  if (promtool_available(daemon.dir())) {
    const std::string file = daemon.dir() + "/metrics.txt";
    write_file(file, text);
    // promtool reads the exposition from stdin.
    const CommandResult lint = run_to_completion({"/bin/sh", "-c", "promtool check metrics < \"$0\"", file},
                                                 daemon.dir() + "/promtool-metrics.out", std::chrono::seconds(30));
    CHECK_MESSAGE(lint.status.code == 0, lint.output);
  }

  const bool sqlite = test_driver() == TestDriver::sqlite;
  const std::set<std::string> sqlite_only{"payorch_store_wal_bytes", "payorch_store_commit_batch_size"};
  const std::set<std::string> postgres_only{"payorch_store_pool_wait_seconds"};
  for (const auto& name : wanted) {
    const std::string family = family_of(name, types);
    const auto of_driver = [&name](const std::set<std::string>& families) {
      for (const auto& f : families)
        if (name == f || name == f + "_bucket" || name == f + "_sum" || name == f + "_count") return true;
      return false;
    };
    if ((sqlite && of_driver(postgres_only)) || (!sqlite && of_driver(sqlite_only))) {
      CHECK_MESSAGE(family.empty(), name << " is on /metrics with the other driver");
      continue;
    }
    CHECK_MESSAGE(!family.empty(), name << " is used by the alerts or the dashboard but not on /metrics");
  }

  // Values: the process, the build, the store's commits, the watchdog.
  const double now_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(sum_of(samples, "process_start_time_seconds") > now_s - 120);
  CHECK(sum_of(samples, "process_start_time_seconds") <= now_s + 1);
  CHECK(sum_of(samples, "process_resident_memory_bytes") > 0);
  CHECK(sum_of(samples, "process_open_fds") > 3);
  CHECK(sum_of(samples, "process_open_fds") < sum_of(samples, "process_max_fds"));
  CHECK(has_sample(samples, "process_cpu_seconds_total"));
  CHECK(has_sample(samples, "process_virtual_memory_bytes"));
  static const std::regex build_info(
      R"re(\npayorch_build_info\{version="([^"]+)",commit="([0-9a-f]{12}|unknown)"\} 1\n)re");
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(text, m, build_info), text);
  CHECK(m[1].str() == PAYORCH_VERSION);
  const std::string driver = sqlite ? "sqlite" : "postgres";
  CHECK(sum_of(samples, "payorch_store_commit_duration_seconds_count", {"driver=\"" + driver + "\""}) >= 3);
  if (sqlite) {
    CHECK(sum_of(samples, "payorch_store_commit_batch_size_count") >= 3);
    CHECK(has_sample(samples, "payorch_store_wal_bytes"));
  } else {
    CHECK(sum_of(samples, "payorch_store_pool_wait_seconds_count") >= 3);
  }
  const double last_ok = sum_of(samples, "payorch_watchdog_last_ok_timestamp_seconds");
  CHECK(last_ok > now_s - 10);
  CHECK(last_ok <= now_s + 1);
  CHECK(sum_of(samples, "payorch_watchdog_interval_seconds") == doctest::Approx(0.5));
  CHECK(sum_of(samples, "payorch_unknown_exposure_cap_payments", {"provider=\"sim\""}) == 100);
  CHECK(sum_of(samples, "payorch_unknown_exposure_cap_amount_minor", {"provider=\"sim\""}) == 100000000);

  // docs/monitoring.md describes every family.
  const std::string doc = read_text(source_dir + "/docs/monitoring.md");
  for (const auto& entry : types)
    CHECK_MESSAGE(doc.find("`" + entry.first + "`") != std::string::npos,
                  entry.first << " is on /metrics but not in docs/monitoring.md");

  // Nothing is open or pending (no case; no tenant has a webhook): the oldest ages have no
  // sample, where 0 would say "one just opened".
  CHECK(types.contains("payorch_reconciliation_oldest_open_age_seconds"));
  CHECK_FALSE(has_sample(samples, "payorch_reconciliation_oldest_open_age_seconds"));
  CHECK(types.contains("payorch_outbox_oldest_pending_age_seconds"));
  CHECK_FALSE(has_sample(samples, "payorch_outbox_oldest_pending_age_seconds"));
}
