#include "support/vendor_sim.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

namespace payorch::test {
namespace {

using namespace std::chrono_literals;

// PAYORCH_TEST_VENDOR_SIM runs the suite against another build of the sim.
std::string vendor_sim_path() {
  const char* override_path = std::getenv("PAYORCH_TEST_VENDOR_SIM");
  return override_path && *override_path ? override_path : PAYORCH_VENDOR_SIM_PATH;
}

std::string make_sim_dir() {
  std::string pattern = "/tmp/payorch-vsim-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  return pattern;
}

ExitStatus decode_status(int wait_status) {
  ExitStatus s;
  if (WIFEXITED(wait_status)) {
    s.exited = true;
    s.code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    s.signal = WTERMSIG(wait_status);
  }
  return s;
}

std::optional<ExitStatus> reap_if_exited(pid_t pid) {
  int wait_status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &wait_status, WNOHANG);
    if (r == pid) return decode_status(wait_status);
    if (r == 0 || errno != EINTR) return std::nullopt;
  }
}

ExitStatus kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  return decode_status(wait_status);
}

// fork + execv with stdout/stderr appended to `log_path`. Only async-signal-safe calls in the
// child (the test process has threads). PR_SET_PDEATHSIG fires when the forking thread exits:
// start sims from the thread that runs the test case.
pid_t spawn_sim(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<std::string> storage{vendor_sim_path()};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int out_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out_fd < 0 || null_fd < 0) {
    const int err = errno;
    if (out_fd >= 0) ::close(out_fd);
    if (null_fd >= 0) ::close(null_fd);
    throw std::runtime_error("cannot open " + log_path + " or /dev/null: " + std::strerror(err));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out_fd);
    ::close(null_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test run
    if (::getppid() != parent) ::_exit(126);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    const char msg[] = "payorch test harness: execv payorch-vendor-sim failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(null_fd);
  return pid;
}

void expect_ok(const HttpResponse& r, std::string_view what) {
  if (r.status != 200)
    throw std::runtime_error("payorch-vendor-sim " + std::string(what) + ": " + r.describe());
}

}  // namespace

VendorSim::VendorSim(std::vector<std::string> extra_args) : dir_(make_sim_dir()) {
  args_ = {"--listen", "127.0.0.1:0", "--port-file", dir_ + "/port", "--db", db_path(),
           "--api-key", vendor_sim_api_key, "--callback-url", "none"};
  args_.insert(args_.end(), extra_args.begin(), extra_args.end());
  start();
}

VendorSim::~VendorSim() {
  if (pid_ > 0) kill_and_reap(pid_);
  if (std::getenv("PAYORCH_KEEP_TEST_DIRS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

void VendorSim::start(const std::vector<std::string>& extra) {
  const std::string port_file = dir_ + "/port";
  std::error_code ec;
  std::filesystem::remove(port_file, ec);
  port_ = 0;
  std::vector<std::string> args = args_;
  args.insert(args.end(), extra.begin(), extra.end());  // a later flag wins
  pid_ = spawn_sim(args, log_path());
  std::optional<ExitStatus> exited;
  const bool up = eventually(
      [&] {
        if ((exited = reap_if_exited(pid_))) return true;
        const std::string text = read_file(port_file);
        return !text.empty() && text.back() == '\n';
      },
      10s);
  if (exited || !up) {
    if (!exited) kill_and_reap(pid_);
    pid_ = -1;
    throw std::runtime_error("payorch-vendor-sim did not start (" +
                             (exited ? exited->describe() : std::string("no port file")) +
                             "):\n" + log_tail());
  }
  port_ = static_cast<std::uint16_t>(std::stoul(read_file(port_file)));
}

void VendorSim::kill9() {
  if (pid_ > 0) kill_and_reap(pid_);
  pid_ = -1;
}

ExitStatus VendorSim::terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) throw std::logic_error("VendorSim::terminate: not running");
  ::kill(pid_, SIGTERM);
  std::optional<ExitStatus> status;
  eventually([&] { return (status = reap_if_exited(pid_)).has_value(); }, timeout);
  if (!status) status = kill_and_reap(pid_);
  pid_ = -1;
  return *status;
}

void VendorSim::restart() {
  kill9();
  start();
}

void VendorSim::restart_on_same_port() {
  const std::uint16_t port = port_;
  kill9();
  start({"--listen", "127.0.0.1:" + std::to_string(port)});
}

bool VendorSim::running() {
  if (pid_ <= 0) return false;
  if (reap_if_exited(pid_)) pid_ = -1;
  return pid_ > 0;
}

std::string VendorSim::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::string VendorSim::log_tail(std::size_t max_bytes) const {
  const std::string text = read_file(log_path());
  return text.size() <= max_bytes ? text : "..." + text.substr(text.size() - max_bytes);
}

HttpResponse VendorSim::control(std::string_view method, std::string_view target,
                                const std::string& body) const {
  Headers headers;
  if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
  return http_request(port_, method, target, headers, body);
}

void VendorSim::add_fault(std::string_view mode, std::int64_t count,
                          std::optional<std::int64_t> delay_ms,
                          std::optional<std::string> source) const {
  boost::json::object fault{{"mode", mode}, {"count", count}};
  if (delay_ms) fault["delay_ms"] = *delay_ms;
  if (source) fault["source"] = *source;
  expect_ok(control("POST", "/_sim/faults", boost::json::serialize(fault)), "POST /_sim/faults");
}

void VendorSim::clear_faults() const {
  expect_ok(control("DELETE", "/_sim/faults"), "DELETE /_sim/faults");
}

void VendorSim::set_config(const boost::json::object& patch) const {
  expect_ok(control("POST", "/_sim/config", boost::json::serialize(patch)), "POST /_sim/config");
}

std::vector<boost::json::object> VendorSim::ledger() const {
  const HttpResponse r = control("GET", "/_sim/ledger");
  expect_ok(r, "GET /_sim/ledger");
  std::vector<boost::json::object> out;
  const boost::json::value body = r.json();
  for (const auto& c : body.as_object().at("charges").as_array()) out.push_back(c.as_object());
  return out;
}

std::int64_t VendorSim::count_charges(const std::string& reference) const {
  SqliteProbe probe(db_path());
  return probe.count("SELECT COUNT(*) FROM charges WHERE reference = ?", {reference});
}

std::vector<SqlRow> VendorSim::charges(const std::string& reference) const {
  SqliteProbe probe(db_path());
  return probe.query(
      "SELECT id, reference, status, decline_code, source, amount_minor, currency, created_at, "
      "updated_at FROM charges WHERE reference = ? ORDER BY created_at, id",
      {reference});
}

int VendorSim::charge_requests_logged(const std::string& reference) const {
  std::istringstream log(read_file(log_path()));
  const std::string needle = "reference=" + reference + " ";
  int n = 0;
  for (std::string line; std::getline(log, line);)
    if (line.starts_with("payorch-vendor-sim ") && line.find(" event=charge.") != std::string::npos &&
        line.find(" event=charge.settled ") == std::string::npos && line.find(needle) != std::string::npos)
      ++n;
  return n;
}

std::string SimProviderConfig::yaml() const {
  return "  - name: " + name + "\n" +
         "    adapter: sim\n" +
         "    base_url: \"" + base_url + "\"\n" +
         "    api_key: \"" + api_key + "\"\n" +
         "    timeouts: " + timeouts + "\n" +
         "    contract: " + contract + "\n" +
         "    retry: " + retry + "\n" +
         "    risk: " + risk + "\n" +
         "    callback: " + callback + "\n";
}

std::string providers_yaml(const std::vector<SimProviderConfig>& providers) {
  std::string out = "providers:\n";
  for (const auto& p : providers) out += p.yaml();
  return out;
}

}  // namespace payorch::test
