#include "core/strict_json.h"

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

#include <vector>

namespace payorch {
namespace {

namespace json = boost::json;

// Builds a json::value from basic_parser events, refusing a duplicated key and keeping the
// source text of each number that is a direct member of the top-level object.
class StrictBuilder {
public:
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  json::value root;
  bool duplicate = false;     // parsing stopped on a duplicated key
  std::string duplicate_key;  // its path ("" for an empty key at the top level)
  std::map<std::string, std::string, std::less<>> top_level_numbers;  // member -> source text

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    frames_.emplace_back(true);
    return true;
  }
  bool on_object_end(std::size_t, json::error_code&) { return end_container(); }
  bool on_array_begin(json::error_code&) {
    frames_.emplace_back(false);
    return true;
  }
  bool on_array_end(std::size_t, json::error_code&) { return end_container(); }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) { return part(s); }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    text_.append(s.data(), s.size());
    Frame& f = frames_.back();
    if (f.object.contains(text_)) {
      const std::string prefix = path();
      duplicate = true;
      duplicate_key = prefix.empty() ? text_ : prefix + "." + text_;
      ec = boost::system::errc::make_error_code(boost::system::errc::invalid_argument);
      return false;
    }
    f.key = std::move(text_);
    text_.clear();
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) { return part(s); }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    text_.append(s.data(), s.size());
    add(json::string(text_));
    text_.clear();
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) { return part(s); }
  bool on_int64(std::int64_t i, json::string_view s, json::error_code&) { return number(i, s); }
  bool on_uint64(std::uint64_t u, json::string_view s, json::error_code&) { return number(u, s); }
  bool on_double(double d, json::string_view s, json::error_code&) { return number(d, s); }
  bool on_bool(bool b, json::error_code&) { return add(b); }
  bool on_null(json::error_code&) { return add(nullptr); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

private:
  struct Frame {
    explicit Frame(bool obj) : is_object(obj) {}
    bool is_object;
    json::object object;
    json::array array;
    std::string key;  // the member whose value is being parsed
  };

  bool part(json::string_view s) {
    text_.append(s.data(), s.size());
    return true;
  }
  bool number(json::value v, json::string_view s) {
    text_.append(s.data(), s.size());
    if (frames_.size() == 1 && frames_.back().is_object)
      top_level_numbers[frames_.back().key] = text_;
    text_.clear();
    return add(std::move(v));
  }
  bool add(json::value v) {
    if (frames_.empty()) root = std::move(v);
    else if (frames_.back().is_object) frames_.back().object.emplace(frames_.back().key, std::move(v));
    else frames_.back().array.push_back(std::move(v));
    return true;
  }
  bool end_container() {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    if (f.is_object) return add(std::move(f.object));
    return add(std::move(f.array));
  }
  // Where the innermost container sits: "" for the top-level object, "metadata" inside it,
  // "x[1]" for the second element of the array "x".
  std::string path() const {
    std::string p;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      if (!frames_[i].is_object) p += "[" + std::to_string(frames_[i].array.size()) + "]";
      else p += (p.empty() ? "" : ".") + frames_[i].key;
    }
    return p;
  }

  std::vector<Frame> frames_;
  std::string text_;  // the key, string or number being assembled from parts
};

}  // namespace

std::variant<StrictJson, StrictJsonError> parse_strict_json(std::string_view text, std::size_t max_depth) {
  using Kind = StrictJsonError::Kind;
  json::parse_options opts;
  opts.max_depth = max_depth;
  json::basic_parser<StrictBuilder> parser(opts);
  json::error_code ec;
  const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used < text.size()) ec = json::error::extra_data;
  StrictBuilder& built = parser.handler();
  if (built.duplicate) return StrictJsonError{Kind::duplicate_key, "duplicate object key \"" + built.duplicate_key + "\""};
  if (ec == json::error::too_deep)
    return StrictJsonError{Kind::too_deep, "JSON nested deeper than " + std::to_string(max_depth) + " levels"};
  if (ec)
    return StrictJsonError{Kind::invalid, "not valid JSON: " + ec.message() + " (near byte " + std::to_string(used) + ")"};
  return StrictJson{std::move(built.root), std::move(built.top_level_numbers)};
}

}  // namespace payorch
