#include "tessera/io/case_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "tessera/core/text.hpp"

namespace tessera::io::detail {

using nlohmann::json;

std::string quoted_list(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) out += (i ? ", '" : "'") + words[i] + "'";
  return out;
}

namespace {
/// "nmae" vs "name": two neighbouring letters swapped (edit distance 2, but one slip).
bool is_transposition(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  std::size_t i = 0;
  while (i < a.size() && a[i] == b[i]) ++i;
  return i + 1 < a.size() && a[i] == b[i + 1] && a[i + 1] == b[i] &&
         a.compare(i + 2, std::string::npos, b, i + 2, std::string::npos) == 0;
}
}  // namespace

std::string suggest(const std::string& word, const std::vector<std::string>& candidates) {
  if (word.size() < 2) return std::string();
  const std::string hint = core::did_you_mean(word, candidates);
  if (!hint.empty()) return hint;
  for (const auto& candidate : candidates)
    if (is_transposition(word, candidate)) return " (did you mean '" + candidate + "'?)";
  return std::string();
}

std::string number_text(double value) {
  std::ostringstream out;
  out << std::setprecision(12) << value;
  return out.str();
}

bool is_plain_identifier(const std::string& word) {
  if (word.empty() || !std::isalpha(static_cast<unsigned char>(word[0]))) return false;
  return std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 128;
  });
}

const json& JsonNode::value() const {
  require_present();
  return *value_;
}

std::string JsonNode::member_key(const std::string& name) const {
  return key_.empty() ? name : key_ + "." + name;
}

std::string JsonNode::element_key(std::size_t index) const {
  return key_ + "[" + std::to_string(index) + "]";
}

void JsonNode::fail(const std::string& message) const { throw KeyError{key_, message}; }

void JsonNode::require_present() const {
  if (!value_) fail("missing required key");
}

std::string JsonNode::describe() const {
  if (!value_) return "nothing";
  std::string text = value_->dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "a number";
    case nlohmann::json::value_t::binary:
      return "binary data";
    case nlohmann::json::value_t::discarded:
      return "nothing";
  }
  return "nothing";
}

std::string JsonNode::type_name() const { return value_ ? json_type_name(*value_) : "nothing"; }

JsonNode JsonNode::operator[](const std::string& name) const {
  require_present();
  if (!value_->is_object()) fail("expected an object {...}, got " + describe());
  auto it = value_->find(name);
  return JsonNode(it == value_->end() ? nullptr : &*it, member_key(name));
}

JsonNode JsonNode::required(const std::string& name, const std::string& fix) const {
  JsonNode child = (*this)[name];
  if (!child.present()) child.fail("missing required key; add " + fix);
  return child;
}

void JsonNode::check_object(const std::vector<std::string>& allowed) const {
  require_present();
  if (!value_->is_object()) fail("expected an object {...}, got " + describe());
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    const std::string hint = suggest(it.key(), allowed);
    JsonNode(&*it, member_key(it.key()))
        .fail(hint.empty() ? "unknown key; valid keys here: " + quoted_list(allowed)
                           : "unknown key" + hint);
  }
}

std::vector<JsonNode> JsonNode::elements(std::size_t min_size, const std::string& what) const {
  require_present();
  if (!value_->is_array()) fail("expected an array [...], got " + describe());
  if (value_->size() < min_size)
    fail("expected at least " + std::to_string(min_size) + " " + what + (min_size == 1 ? "" : "s") +
         ", got " + describe());
  std::vector<JsonNode> out;
  for (std::size_t i = 0; i < value_->size(); ++i) out.emplace_back(&(*value_)[i], element_key(i));
  return out;
}

std::vector<std::pair<std::string, JsonNode>> JsonNode::members() const {
  require_present();
  if (!value_->is_object()) fail("expected an object {...}, got " + describe());
  std::vector<std::pair<std::string, JsonNode>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it)
    out.emplace_back(it.key(), JsonNode(&*it, member_key(it.key())));
  return out;
}

std::string JsonNode::string(std::optional<std::string> fallback) const {
  if (!value_ && fallback) return *fallback;
  require_present();
  if (!value_->is_string()) fail("expected a string, got " + describe());
  return value_->get<std::string>();
}

std::string JsonNode::choice(const std::vector<std::string>& options,
                             std::optional<std::string> fallback) const {
  if (!value_ && fallback) return *fallback;
  require_present();
  std::vector<std::string> quoted;
  for (const auto& o : options) quoted.push_back("\"" + o + "\"");
  std::string expected = "expected one of ";
  for (std::size_t i = 0; i < quoted.size(); ++i) expected += (i ? ", " : "") + quoted[i];
  if (!value_->is_string()) fail(expected + ", got " + describe());
  const std::string word = value_->get<std::string>();
  if (std::find(options.begin(), options.end(), word) == options.end())
    fail(expected + ", got " + describe() + suggest(word, options));
  return word;
}

double JsonNode::number(Range range, std::optional<double> fallback) const {
  if (!value_ && fallback) return *fallback;
  require_present();
  const char* what = range == Range::positive       ? "a positive number"
                     : range == Range::non_negative ? "a non-negative number"
                                                    : "a number";
  if (!value_->is_number()) fail(std::string("expected ") + what + ", got " + describe());
  const double v = value_->get<double>();
  if ((range == Range::positive && !(v > 0)) || (range == Range::non_negative && !(v >= 0)))
    fail(std::string("expected ") + what + ", got " + describe());
  return v;
}

int64_t JsonNode::integer(int64_t min, std::optional<int64_t> fallback) const {
  if (!value_ && fallback) return *fallback;
  require_present();
  const std::string what = min == 1   ? "a positive integer"
                           : min == 0 ? "a non-negative integer"
                                      : "an integer >= " + std::to_string(min);
  bool ok = false;
  int64_t v = 0;
  if (value_->is_number_unsigned()) {
    const auto u = value_->get<uint64_t>();
    ok = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    v = static_cast<int64_t>(u);
  } else if (value_->is_number_integer()) {
    ok = true;
    v = value_->get<int64_t>();
  } else if (value_->is_number_float()) {  // 1e3
    const double d = value_->get<double>();
    ok = std::floor(d) == d && std::abs(d) < 9.0e15;
    v = ok ? static_cast<int64_t>(d) : 0;
  }
  if (!ok || v < min) fail("expected " + what + ", got " + describe());
  return v;
}

uint64_t JsonNode::unsigned_integer(std::optional<uint64_t> fallback) const {
  if (!value_ && fallback) return *fallback;
  require_present();
  if (value_->is_number_unsigned()) return value_->get<uint64_t>();
  if (value_->is_number_float()) {
    const double d = value_->get<double>();
    if (d >= 0 && std::floor(d) == d && d < 9.0e15) return static_cast<uint64_t>(d);
  }
  fail("expected a non-negative integer, got " + describe());
}

bool JsonNode::boolean(std::optional<bool> fallback) const {
  if (!value_ && fallback) return *fallback;
  require_present();
  if (!value_->is_boolean()) fail("expected true or false, got " + describe());
  return value_->get<bool>();
}

ExpressionText JsonNode::expression() const {
  require_present();
  if (value_->is_number()) return {value_->dump(), key_};
  if (!value_->is_string())
    fail("expected an expression (a string such as \"sin(pi*x)\", or a number), got " + describe());
  std::string text = value_->get<std::string>();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    fail("empty expression; write one, e.g. \"0\"");
  return {text, key_};
}

}  // namespace tessera::io::detail
