#pragma once
// Schema-checked reading of a yaml-cpp document. Internal to src/config: config.cpp says what
// the keys are, this file says how a bad value is reported. Every problem is collected (never
// thrown) as "FILE:LINE:COL: key.path: message" so one run of check-config shows all of them.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "core/duration.h"

namespace payorch::config::detail {

// Collects errors for one file and reads *_file secrets relative to that file's folder.
class Reader {
public:
  Reader(std::string file_name, std::filesystem::path base_dir);

  // `at` is yaml-cpp's 0-based mark; messages print it 1-based. An unknown mark prints as 1:1.
  void error(const YAML::Mark& at, std::string_view path, std::string_view message);
  bool failed() const { return !errors_.empty(); }
  // All errors, one per line, in file order.
  std::string report() const;

  // Reads a secret file: contents without trailing whitespace. `path` is expanded first (see
  // expand_file_path). On failure returns nullopt and sets `problem` to a message naming the
  // resolved path and the OS error (or "is empty"), or what is wrong with the expansion.
  std::optional<std::string> read_secret_file(const std::string& path, std::string& problem) const;
  // The file a *_file or preset setting names: expanded first (see expand_file_path) and, when
  // relative, taken from this file's folder. nullopt with `problem` set when expansion fails.
  std::optional<std::filesystem::path> resolve(const std::string& path, std::string& problem) const;
  // Takes the errors of another file read with its own Reader (a provider preset): reported
  // after this file's, each with its own file name and line.
  void absorb(const Reader& other);

private:
  struct Error {
    int rank;  // 0: this file; absorbed files after it
    int line;
    int column;
    std::string text;
  };
  std::string file_name_;
  std::filesystem::path base_dir_;
  std::vector<Error> errors_;
};

// One `key: value` of a mapping.
struct Field {
  std::string path;  // "providers[0].retry.max_attempts"
  YAML::Node key;
  YAML::Node value;

  // Where to point a message about the value: the value itself when it is a scalar, else the
  // key (a block mapping's own mark is its first child's line; a null value has no position).
  YAML::Mark mark() const;
};

// A secret given inline (`token: …`) or by file (`token_file: …`); `field` is whichever was used.
struct Secret {
  std::string value;
  const Field* field;
};

// A mapping checked against its allowed keys. Unknown and repeated keys are reported when the
// Section is opened; the readers below report missing and malformed values. Each reader
// returns false only when it reported an error; an absent optional key leaves `out` untouched
// (so config.h's defaults apply) and returns true.
class Section {
public:
  Section(Reader& reader, const YAML::Node& map, const YAML::Mark& at, std::string path,
          std::initializer_list<std::string_view> keys);

  const std::string& path() const { return path_; }
  const YAML::Mark& mark() const { return mark_; }
  Reader& reader() const { return *reader_; }
  // Whether the mapping was given (a null value, `webhook:` with its lines commented out,
  // counts as not given).
  bool present() const { return present_; }
  // False when the section was required but missing, or was not a mapping: its keys then
  // read as absent and "missing required key" is not reported again for each of them.
  bool ok() const { return !broken_; }

  const Field* find(std::string_view key) const;
  // Where to point a message about `key`: the key if present, else this section.
  YAML::Mark mark_of(std::string_view key) const;
  std::string path_of(std::string_view key) const;
  // Reports "missing required key" at this section.
  void missing(std::string_view key) const;

  // Opens a nested mapping; an absent or unusable one is returned empty (see present(), ok()).
  Section section(std::string_view key, std::initializer_list<std::string_view> keys,
                  bool required) const;
  // The required, non-empty list `key`, each item opened as a Section named "key[i]". Items
  // that are not mappings are reported and left out; so is anything wrong with the list.
  std::vector<Section> list(std::string_view key, std::initializer_list<std::string_view> item_keys,
                            std::string_view noun) const;

  // Reports `key` as a duplicate when `value` is already in `seen` (value -> path of the
  // section that gave it first); otherwise records it.
  void unique(std::string_view key, std::string_view noun, const std::string& value,
              std::map<std::string, std::string, std::less<>>& seen) const;

  bool text(std::string_view key, std::string& out, bool required) const;
  bool integer(std::string_view key, std::int64_t& out, std::int64_t min, std::int64_t max) const;
  bool duration(std::string_view key, Millis& out, bool required = false) const;
  // Like duration(), also accepting `never` (stored as nullopt).
  bool duration_or_never(std::string_view key, std::optional<Millis>& out) const;
  // `key` or `key_file`, not both. Returns nullopt when absent (reported if required) or bad.
  std::optional<Secret> secret(std::string_view key, bool required) const;

  template <class Int>
  bool integer(std::string_view key, Int& out, std::int64_t min, std::int64_t max) const {
    std::int64_t v = static_cast<std::int64_t>(out);
    if (!integer(key, v, min, max)) return false;
    out = static_cast<Int>(v);
    return true;
  }

private:
  Section(Reader& reader, const YAML::Mark& at, std::string path, bool broken);
  std::optional<std::string> scalar(const Field& f, std::string_view expected) const;
  // What a reader returns for an absent key, after reporting it if it was required.
  bool absent(std::string_view key, bool required) const;
  bool read_duration(const Field& f, bool allow_never, std::optional<Millis>& out) const;

  Reader* reader_;
  std::string path_;
  YAML::Mark mark_;
  std::vector<Field> fields_;
  bool present_ = false;
  bool broken_ = false;
};

// `${CREDENTIALS_DIRECTORY}` in a *_file path becomes that environment variable: the folder
// where systemd puts a unit's LoadCredential= files. No other variable is expanded. Returns
// nullopt with `problem` set when the variable is unset or empty, another `${NAME}` is used, or
// a `${` is not closed.
std::optional<std::string> expand_file_path(std::string_view path, std::string& problem);

// The whole file, or nullopt with `os_error` set to strerror(errno).
std::optional<std::string> read_whole_file(const std::filesystem::path& path,
                                           std::string& os_error);

// Printable ASCII without spaces: tokens and keys that travel in HTTP headers.
bool is_visible_ascii(std::string_view s);
// "http://" or "https://", a non-empty host, no spaces or control characters.
bool is_http_url(std::string_view s);

// "a.b" from "a" and "b"; "b" when the parent is the top level.
std::string join_path(std::string_view parent, std::string_view key);

}  // namespace payorch::config::detail
