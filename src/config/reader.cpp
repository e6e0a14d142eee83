#include "config/reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <utility>

namespace payorch::config::detail {
namespace {

std::string_view type_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

// Levenshtein distance, for "did you mean" on unknown keys.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string unknown_key_message(std::string_view key,
                                std::initializer_list<std::string_view> keys) {
  std::string msg = "unknown key '" + std::string(key) + "'";
  for (std::string_view k : keys)
    if (edit_distance(key, k) <= std::max<std::size_t>(1, k.size() / 4))
      return msg + " (did you mean '" + std::string(k) + "'?)";
  if (keys.size() == 0) return msg + "; this mapping takes no keys here";
  msg += "; expected one of:";
  for (std::string_view k : keys) msg += " " + std::string(k);
  return msg;
}

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

// Keys and values quoted in messages come from the YAML, where "a\nb" is a valid key: control
// characters are shown escaped, so that every report line stays "FILE:LINE:COL: path: message".
std::string printable(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out.push_back(hex[u >> 4]);
      out.push_back(hex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string join_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

Reader::Reader(std::string file_name, std::filesystem::path base_dir)
    : file_name_(std::move(file_name)), base_dir_(std::move(base_dir)) {}

void Reader::error(const YAML::Mark& at, std::string_view path, std::string_view message) {
  const bool known = at.line >= 0 && at.column >= 0;
  std::string e = file_name_ + ":" + std::to_string(known ? at.line + 1 : 1) + ":" +
                  std::to_string(known ? at.column + 1 : 1) + ": " + printable(path) + ": " +
                  printable(message);
  errors_.push_back(Error{0, known ? at.line : 0, known ? at.column : 0, std::move(e)});
}

void Reader::absorb(const Reader& other) {
  const int rank = 1 + std::accumulate(errors_.begin(), errors_.end(), 0, [](int r, const Error& e) {
                     return std::max(r, e.rank);
                   });
  for (Error e : other.errors_) {
    e.rank += rank;
    errors_.push_back(std::move(e));
  }
}

std::string Reader::report() const {
  std::vector<Error> sorted = errors_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Error& a, const Error& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  std::string out;
  for (const Error& e : sorted) {
    if (!out.empty()) out += '\n';
    out += e.text;
  }
  return out;
}

std::optional<std::string> read_whole_file(const std::filesystem::path& path,
                                           std::string& os_error) {
  errno = 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    os_error = std::strerror(errno);
    return std::nullopt;
  }
  // A config or a secret is a small regular file: a device (/dev/zero, /dev/stdin) or a pipe
  // would have a check-config read for ever or block.
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    os_error = "not a regular file";
    return std::nullopt;
  }
  constexpr std::size_t max_bytes = 1 << 20;
  std::string contents;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    contents.append(buf, n);
    if (contents.size() > max_bytes) {
      os_error = "larger than 1 MiB";
      return std::nullopt;
    }
  }
  if (std::ferror(f.get())) {  // e.g. EISDIR: fopen succeeds on a directory, fread fails
    os_error = std::strerror(errno);
    return std::nullopt;
  }
  return contents;
}

std::optional<std::string> expand_file_path(std::string_view path, std::string& problem) {
  static constexpr std::string_view variable = "CREDENTIALS_DIRECTORY";
  std::string out;
  for (std::size_t at = 0;;) {
    const std::size_t open = path.find("${", at);
    if (open == std::string_view::npos) {
      out += path.substr(at);
      return out;
    }
    out += path.substr(at, open - at);
    const std::size_t close = path.find('}', open + 2);
    if (close == std::string_view::npos) {
      problem = "unterminated ${ in \"" + std::string(path) + "\"";
      return std::nullopt;
    }
    const std::string_view name = path.substr(open + 2, close - open - 2);
    if (name != variable) {
      problem = "${" + std::string(name) + "} is not expanded; a file path may only use " +
                "${CREDENTIALS_DIRECTORY}";
      return std::nullopt;
    }
    const char* value = std::getenv(std::string(variable).c_str());
    if (value == nullptr || *value == '\0') {
      problem = "${CREDENTIALS_DIRECTORY} is not set: systemd sets it for a unit with "
                "LoadCredential=; outside systemd, set it to the folder holding the credential "
                "files";
      return std::nullopt;
    }
    out += value;
    at = close + 1;
  }
}

std::optional<std::filesystem::path> Reader::resolve(const std::string& given,
                                                    std::string& problem) const {
  const std::optional<std::string> path = expand_file_path(given, problem);
  if (!path) return std::nullopt;
  return std::filesystem::path(*path).is_absolute() ? std::filesystem::path(*path)
                                                    : base_dir_ / *path;
}

std::optional<std::string> Reader::read_secret_file(const std::string& given,
                                                    std::string& problem) const {
  const std::optional<std::filesystem::path> found = resolve(given, problem);
  if (!found) return std::nullopt;
  const std::filesystem::path& resolved = *found;
  const std::string shown = resolved.lexically_normal().string();
  std::string os_error;
  std::optional<std::string> contents = read_whole_file(resolved, os_error);
  if (!contents) {
    problem = "cannot read " + shown + ": " + os_error;
    return std::nullopt;
  }
  while (!contents->empty() &&
         std::string_view(" \t\r\n").find(contents->back()) != std::string_view::npos)
    contents->pop_back();
  if (contents->empty()) {
    problem = shown + " is empty";
    return std::nullopt;
  }
  return contents;
}

bool is_visible_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

bool is_http_url(std::string_view s) {
  std::string_view rest;
  if (s.starts_with("http://")) rest = s.substr(7);
  else if (s.starts_with("https://")) rest = s.substr(8);
  else return false;
  return !rest.empty() && rest.front() != '/' && is_visible_ascii(s);
}

YAML::Mark Field::mark() const { return value.IsScalar() ? value.Mark() : key.Mark(); }

Section::Section(Reader& reader, const YAML::Node& map, const YAML::Mark& at, std::string path,
                 std::initializer_list<std::string_view> keys)
    : reader_(&reader), path_(std::move(path)), mark_(at), present_(true) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: `it->first` lives in a proxy that dies with the expression.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      reader.error(key.Mark(), path_,
                   "keys must be plain names, got " + std::string(type_name(key)));
      continue;
    }
    const std::string& name = key.Scalar();
    if (std::find(keys.begin(), keys.end(), name) == keys.end()) {
      reader.error(key.Mark(), join_path(path_, name), unknown_key_message(name, keys));
      continue;
    }
    if (const Field* first = find(name)) {
      reader.error(key.Mark(), first->path,
                   "duplicate key (first given at line " +
                       std::to_string(first->key.Mark().line + 1) + ")");
      continue;
    }
    fields_.push_back(Field{join_path(path_, name), key, value});
  }
}

const Field* Section::find(std::string_view key) const {
  for (const Field& f : fields_)
    if (f.key.Scalar() == key) return &f;
  return nullptr;
}

YAML::Mark Section::mark_of(std::string_view key) const {
  const Field* f = find(key);
  return f ? f->mark() : mark_;
}

std::string Section::path_of(std::string_view key) const { return join_path(path_, key); }

void Section::missing(std::string_view key) const {
  if (!broken_) reader_->error(mark_, path_of(key), "missing required key");
}

Section::Section(Reader& reader, const YAML::Mark& at, std::string path, bool broken)
    : reader_(&reader), path_(std::move(path)), mark_(at), broken_(broken) {}

Section Section::section(std::string_view key, std::initializer_list<std::string_view> keys,
                         bool required) const {
  const Field* f = find(key);
  if (f == nullptr || f->value.IsNull()) {
    if (required && !broken_) {
      if (f == nullptr) missing(key);
      else reader_->error(f->mark(), f->path, "is empty; expected a mapping");
    }
    return Section(*reader_, f ? f->mark() : mark_, path_of(key), required);
  }
  if (!f->value.IsMap()) {
    reader_->error(f->mark(), f->path,
                   "expected a mapping, got " + std::string(type_name(f->value)));
    return Section(*reader_, f->mark(), f->path, true);
  }
  Section s(*reader_, f->value, f->key.Mark(), f->path, keys);
  s.present_ = true;
  return s;
}

std::vector<Section> Section::list(std::string_view key,
                                   std::initializer_list<std::string_view> item_keys,
                                   std::string_view noun) const {
  std::vector<Section> out;
  const Field* f = find(key);
  if (f == nullptr) {
    missing(key);
  } else if (f->value.IsNull() || (f->value.IsSequence() && f->value.size() == 0)) {
    reader_->error(f->mark(), f->path, "at least one " + std::string(noun) + " is required");
  } else if (!f->value.IsSequence()) {
    reader_->error(f->mark(), f->path, "expected a list, got " + std::string(type_name(f->value)));
  } else {
    std::size_t i = 0;
    for (auto it = f->value.begin(); it != f->value.end(); ++it, ++i) {
      const YAML::Node item = *it;
      const std::string path = f->path + "[" + std::to_string(i) + "]";
      if (item.IsMap())
        out.emplace_back(*reader_, item, item.Mark(), path, item_keys);
      else
        reader_->error(item.Mark().line >= 0 ? item.Mark() : f->key.Mark(), path,
                       "expected a mapping, got " + std::string(type_name(item)));
    }
  }
  return out;
}

void Section::unique(std::string_view key, std::string_view noun, const std::string& value,
                     std::map<std::string, std::string, std::less<>>& seen) const {
  const auto [first, inserted] = seen.emplace(value, path_);
  if (!inserted)
    reader_->error(mark_of(key), path_of(key),
                   "duplicate " + std::string(noun) + " \"" + value + "\" (first given as " +
                       first->second + ")");
}

bool Section::absent(std::string_view key, bool required) const {
  if (required) missing(key);
  return !required;
}

std::optional<std::string> Section::scalar(const Field& f, std::string_view expected) const {
  if (!f.value.IsScalar()) {
    reader_->error(
        f.mark(), f.path,
        "expected " + std::string(expected) + ", got " + std::string(type_name(f.value)));
    return std::nullopt;
  }
  return f.value.Scalar();
}

bool Section::text(std::string_view key, std::string& out, bool required) const {
  const Field* f = find(key);
  if (f == nullptr) return absent(key, required);
  std::optional<std::string> s = scalar(*f, "a string");
  if (!s) return false;
  if (s->empty()) {
    reader_->error(f->mark(), f->path, "must not be empty");
    return false;
  }
  out = std::move(*s);
  return true;
}

bool Section::integer(std::string_view key, std::int64_t& out, std::int64_t min,
                      std::int64_t max) const {
  const Field* f = find(key);
  if (f == nullptr) return true;
  std::optional<std::string> s = scalar(*f, "an integer");
  if (!s) return false;
  // A quoted "10" is a string in YAML; only plain (or !!int) scalars are numbers here.
  const std::string& tag = f->value.Tag();
  const bool plain = tag == "?" || tag == "tag:yaml.org,2002:int";
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (!plain || s->empty() || ec == std::errc::invalid_argument || end != s->data() + s->size()) {
    reader_->error(f->mark(), f->path, "expected an integer, got " + in_quotes(*s));
    return false;
  }
  if (ec == std::errc::result_out_of_range || v > max) {
    reader_->error(f->mark(), f->path, "must be at most " + std::to_string(max) + ", got " + *s);
    return false;
  }
  if (v < min) {
    reader_->error(f->mark(), f->path, "must be at least " + std::to_string(min) + ", got " + *s);
    return false;
  }
  out = v;
  return true;
}

namespace {
constexpr std::string_view duration_help =
    "expected a duration: a positive whole number and a unit ms|s|m|h|d (250ms, 2s, 5m, 24h, "
    "7d; at most 3650d)";
}

bool Section::duration(std::string_view key, Millis& out, bool required) const {
  const Field* f = find(key);
  if (f == nullptr) return absent(key, required);
  std::optional<Millis> d;
  if (!read_duration(*f, false, d)) return false;
  out = *d;
  return true;
}

bool Section::duration_or_never(std::string_view key, std::optional<Millis>& out) const {
  const Field* f = find(key);
  return f == nullptr || read_duration(*f, true, out);
}

bool Section::read_duration(const Field& f, bool allow_never, std::optional<Millis>& out) const {
  const std::string_view also = allow_never ? " or never" : "";
  std::optional<std::string> s = scalar(f, "a duration" + std::string(also));
  if (!s) return false;
  if (allow_never && *s == "never") {
    out = std::nullopt;
    return true;
  }
  out = parse_duration(*s);
  if (!out) {
    reader_->error(f.mark(), f.path,
                   std::string(duration_help) + std::string(also) + ", got " + in_quotes(*s));
    return false;
  }
  return true;
}

std::optional<Secret> Section::secret(std::string_view key, bool required) const {
  const std::string file_key = std::string(key) + "_file";
  const Field* inline_field = find(key);
  const Field* file_field = find(file_key);
  if (inline_field != nullptr && file_field != nullptr) {
    reader_->error(file_field->key.Mark(), file_field->path,
                   "give either " + std::string(key) + " or " + file_key + ", not both");
    return std::nullopt;
  }
  if (inline_field == nullptr && file_field == nullptr) {
    if (required && !broken_)
      reader_->error(mark_, path_of(key), "missing required key (or " + file_key + ")");
    return std::nullopt;
  }
  if (inline_field != nullptr) {
    std::string value;
    if (!text(key, value, true)) return std::nullopt;
    return Secret{std::move(value), inline_field};
  }
  std::string path;
  if (!text(file_key, path, true)) return std::nullopt;
  std::string problem;
  std::optional<std::string> value = reader_->read_secret_file(path, problem);
  if (!value) {
    reader_->error(file_field->mark(), file_field->path, problem);
    return std::nullopt;
  }
  return Secret{std::move(*value), file_field};
}

}  // namespace payorch::config::detail
