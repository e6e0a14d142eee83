// payorch_fuzz_replay: runs files through the fuzz targets without libFuzzer, so the kept seed
// corpora (and the crash reproducers among them) are a regression test in any build.
//
//   payorch_fuzz_replay TARGET PATH...   every file of each PATH (a file or a folder, recursively)
//   payorch_fuzz_replay --list           the targets
//
// A property violation aborts; the file being run is printed first.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int payorch_fuzz_intake(const std::uint8_t*, std::size_t);
extern "C" int payorch_fuzz_callback(const std::uint8_t*, std::size_t);
extern "C" int payorch_fuzz_stripe_callback(const std::uint8_t*, std::size_t);
extern "C" int payorch_fuzz_config(const std::uint8_t*, std::size_t);
extern "C" int payorch_fuzz_settlement(const std::uint8_t*, std::size_t);

namespace {

struct Target {
  std::string_view name;
  int (*run)(const std::uint8_t*, std::size_t);
};
constexpr Target targets[] = {
    {"intake", payorch_fuzz_intake},
    {"callback", payorch_fuzz_callback},
    {"stripe_callback", payorch_fuzz_stripe_callback},
    {"config", payorch_fuzz_config},
    {"settlement", payorch_fuzz_settlement},
};

char current[4096] = "";

void on_fatal(int sig) {
  const char msg[] = "payorch_fuzz_replay: input that failed: ";
  (void)!write(2, msg, sizeof msg - 1);
  (void)!write(2, current, std::strlen(current));
  (void)!write(2, "\n", 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc == 2 && std::string_view(argv[1]) == "--list") {
    for (const Target& t : targets) std::printf("%.*s\n", static_cast<int>(t.name.size()), t.name.data());
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TARGET PATH... | --list\n", argv[0]);
    return 2;
  }
  const Target* target = nullptr;
  for (const Target& t : targets)
    if (t.name == argv[1]) target = &t;
  if (!target) {
    std::fprintf(stderr, "unknown target %s (see --list)\n", argv[1]);
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 2; i < argc; ++i) {
    const fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "no such file or folder: %s\n", argv[i]);
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "no inputs in the given paths\n");
    return 2;
  }
  std::sort(files.begin(), files.end());
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_fatal);
  for (const fs::path& f : files) {
    std::snprintf(current, sizeof current, "%s", f.c_str());
    std::ifstream in(f, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    target->run(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
  }
  std::printf("%.*s: %zu inputs passed\n", static_cast<int>(target->name.size()), target->name.data(), files.size());
  return 0;
}
