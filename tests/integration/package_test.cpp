// The .deb packages (docs/install.md): built by CPack from this build, unpacked into a scratch
// root, their contents checked, the maintainer script run against stand-in system tools, and
// the packaged payorchd run on the packaged example configuration.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "support/daemon.h"

using namespace payorch::test;
using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// A shell command line, run to completion in `dir`.
CommandResult sh(const std::string& dir, const std::string& line, std::chrono::milliseconds timeout = 120s) {
  static int n = 0;
  return run_to_completion({"/bin/sh", "-c", "cd '" + dir + "' && " + line},
                           dir + "/sh-" + std::to_string(++n) + ".log", timeout);
}

}  // namespace

TEST_CASE("package: the .deb holds a stripped payorchd, the unit, a conffile and the user" *
          doctest::test_suite("driver-free")) {
  Daemon scratch;  // not started: for its temp dir
  const std::string dir = scratch.dir();
  const std::string build_dir = fs::path(PAYORCHD_PATH).parent_path().string();
  const CommandResult built =
      sh(dir, "cpack -G DEB --config '" + build_dir + "/CPackConfig.cmake' -B '" + dir + "/out'", 300s);
  REQUIRE_MESSAGE((built.status.exited && built.status.code == 0), built.output);
  std::string deb, sim_deb;  // payorch_<version>_<arch>.deb, payorch-vendor-sim_<version>_<arch>.deb
  for (const auto& entry : fs::directory_iterator(dir + "/out")) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("payorch_" PAYORCH_VERSION "_") && name.ends_with(".deb")) deb = entry.path().string();
    if (name.starts_with("payorch-vendor-sim_" PAYORCH_VERSION "_") && name.ends_with(".deb")) sim_deb = entry.path().string();
  }
  REQUIRE_MESSAGE(!deb.empty(), built.output);
  REQUIRE_MESSAGE(!sim_deb.empty(), built.output);

  const CommandResult unpacked = sh(dir, "dpkg -x '" + deb + "' root && dpkg-deb -e '" + deb + "' control");
  REQUIRE_MESSAGE((unpacked.status.exited && unpacked.status.code == 0), unpacked.output);
  const std::string root = dir + "/root";

  // payorchd: executable and stripped.
  const std::string binary = root + "/usr/bin/payorchd";
  struct stat st {};
  REQUIRE(::stat(binary.c_str(), &st) == 0);
  CHECK((st.st_mode & S_IXUSR) != 0);
  const CommandResult sections = sh(dir, "readelf -S '" + binary + "'");
  REQUIRE(sections.status.code == 0);
  CHECK(contains(sections.output, ".text"));
  CHECK_FALSE(contains(sections.output, ".debug_info"));
  CHECK_FALSE(contains(sections.output, ".symtab"));
  // The demo vendor is not in it: it has its own package.
  CHECK_FALSE(fs::exists(root + "/usr/bin/payorch-vendor-sim"));
  const CommandResult sim_listing = sh(dir, "dpkg-deb -c '" + sim_deb + "' && dpkg-deb -f '" + sim_deb + "' Description");
  CHECK(contains(sim_listing.output, "./usr/bin/payorch-vendor-sim"));
  CHECK(contains(sim_listing.output, "unauthenticated"));

  // The unit runs the packaged binary as the user payorch.
  const std::string unit = read_file(root + "/lib/systemd/system/payorchd.service");
  CHECK(contains(unit, "\nExecStart=/usr/bin/payorchd serve --config /etc/payorch/payorchd.yaml\n"));
  CHECK(contains(unit, "\nUser=payorch\n"));
  CHECK_FALSE(contains(unit, "/usr/local/"));

  // The example configuration, a conffile.
  CHECK(fs::exists(root + "/etc/payorch/payorchd.yaml"));
  CHECK(read_file(dir + "/control/conffiles") == "/etc/payorch/payorchd.yaml\n");
  CHECK(fs::exists(root + "/usr/share/doc/payorch/README.md"));

  // postinst against stand-ins for getent, adduser, install and systemctl that log their
  // arguments: the user and the credentials folder on first configure, nothing again once the
  // user exists.
  fs::create_directories(dir + "/fakebin");
  for (const char* tool : {"adduser", "install", "systemctl"})
    std::ofstream(dir + "/fakebin/" + tool) << "#!/bin/sh\necho \"" << tool << " $*\" >> \"$CALLS\"\n";
  std::ofstream(dir + "/fakebin/getent") << "#!/bin/sh\n[ -e \"$USER_EXISTS\" ]\n";
  REQUIRE(sh(dir, "chmod +x fakebin/*").status.code == 0);
  const std::string env = "PATH='" + dir + "/fakebin':/usr/bin:/bin CALLS='" + dir + "/calls' USER_EXISTS='" + dir + "/user' ";
  const CommandResult first = sh(dir, env + "sh control/postinst configure");
  CHECK_MESSAGE((first.status.exited && first.status.code == 0), first.output);
  const std::string calls = read_file(dir + "/calls");
  CHECK_MESSAGE(std::regex_search(calls, std::regex("adduser --system --group .*payorch\n")), calls);
  CHECK(contains(calls, "install -d -m 0750 -o root -g payorch /etc/payorch/credentials\n"));
  std::ofstream(dir + "/user") << "";
  fs::remove(dir + "/calls");
  const CommandResult again = sh(dir, env + "sh control/postinst configure");
  CHECK((again.status.exited && again.status.code == 0));
  CHECK_FALSE(contains(read_file(dir + "/calls"), "adduser"));

  // The packaged payorchd accepts the packaged configuration, given the secret files it names.
  // The unit loads one directory credential, ID:/etc/payorch/credentials, and systemd names the
  // copy of each FILE in it "ID_FILE": every ${CREDENTIALS_DIRECTORY}/ID_FILE the configuration
  // reads gets a dummy secret, as systemd would copy it.
  std::smatch credential;
  REQUIRE(std::regex_search(unit, credential, std::regex("\nLoadCredential=([A-Za-z0-9._-]+):/etc/payorch/credentials\n")));
  const std::string id = credential[1].str();
  fs::create_directories(dir + "/credentials");
  const std::string config_text = read_file(root + "/etc/payorch/payorchd.yaml");
  const std::regex named(R"(\$\{CREDENTIALS_DIRECTORY\}/()" + id + R"(_[A-Za-z0-9._-]+))");
  int credentials = 0;
  for (auto it = std::sregex_iterator(config_text.begin(), config_text.end(), named); it != std::sregex_iterator(); ++it) {
    std::ofstream(dir + "/credentials/" + (*it)[1].str()) << "dummy-secret-" << (*it)[1].str() << "-0123456789abcdef\n";
    ++credentials;
  }
  CHECK(credentials > 0);
  const CommandResult checked = sh(dir, "CREDENTIALS_DIRECTORY='" + dir + "/credentials' '" + binary +
                                            "' check-config --config '" + root + "/etc/payorch/payorchd.yaml'");
  CHECK_MESSAGE((checked.status.exited && checked.status.code == 0), checked.output);
  CHECK(contains(checked.output, "payorchd.yaml: ok"));
}
