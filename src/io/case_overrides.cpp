#include "tessera/io/case_overrides.hpp"

#include <cctype>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/io/case_reader.hpp"

namespace tessera::io::detail {

using nlohmann::json;

namespace {

struct PathStep {
  std::string text;
  bool bracket = false;  // written as [n]: must index an array
};

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::vector<PathStep> split_path(const std::string& path, const std::string& text) {
  std::vector<PathStep> steps;
  std::size_t i = 0;
  const auto bad = [&](const std::string& why) {
    TESSERA_FAIL("--set '" << text << "': " << why
                           << "; write the key path with dots and indices, e.g. "
                              "training.stages.0.iterations=200");
  };
  while (true) {
    // One dotted segment: a key (possibly empty before brackets) and any [n] after it.
    std::size_t end = path.find_first_of(".[", i);
    std::string key = path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    const bool leading_bracket = key.empty() && end != std::string::npos && path[end] == '[' &&
                                 !steps.empty() && i > 0 && path[i - 1] != '.';
    if (key.empty() && !leading_bracket) bad("empty key in path '" + path + "'");
    if (!key.empty()) steps.push_back({key, false});
    i = end;
    while (i != std::string::npos && i < path.size() && path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string::npos) bad("missing ']' in path '" + path + "'");
      const std::string index = path.substr(i + 1, close - i - 1);
      if (!all_digits(index)) bad("'[" + index + "]' is not an array index");
      steps.push_back({index, true});
      i = close + 1;
    }
    if (i == std::string::npos || i >= path.size()) break;
    if (path[i] != '.') bad("expected '.' or '[' after ']' in path '" + path + "'");
    ++i;
    if (i >= path.size()) bad("empty key in path '" + path + "'");
  }
  return steps;
}

}  // namespace

AppliedOverride apply_override(json& document, const std::string& text) {
  const std::size_t eq = text.find('=');
  TESSERA_CHECK(eq != std::string::npos && eq > 0, "--set '" << text << "': expected path=value");
  const std::string path = text.substr(0, eq);
  const std::string value_text = text.substr(eq + 1);
  const std::vector<PathStep> steps = split_path(path, text);

  json value = json::parse(value_text, nullptr, /*allow_exceptions=*/false,
                           /*ignore_comments=*/true);
  if (value.is_discarded()) value = value_text;

  json* node = &document;
  std::string key;  // the key path walked so far, in message form
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const PathStep& step = steps[s];
    const bool last = s + 1 == steps.size();
    if (node->is_array()) {
      TESSERA_CHECK(all_digits(step.text), "--set '" << text << "': " << key
                                                     << " is an array; use an index, not '"
                                                     << step.text << "'");
      const std::size_t index = std::stoul(step.text);
      TESSERA_CHECK(index < node->size(),
                    "--set '" << text << "': index " << index << " is past the end of " << key
                              << ", which has " << node->size() << " entr"
                              << (node->size() == 1 ? "y" : "ies")
                              << "; change an existing entry or replace the whole array");
      key += "[" + step.text + "]";
      node = &(*node)[index];
    } else if (node->is_object()) {
      TESSERA_CHECK(!step.bracket, "--set '" << text << "': " << (key.empty() ? "the case" : key)
                                             << " is an object, not an array; use ." << step.text
                                             << " for a key");
      key += (key.empty() ? "" : ".") + step.text;
      node = &(*node)[step.text];  // creates a missing key (null until filled)
      if (!last && node->is_null()) *node = json::object();
    } else {
      TESSERA_FAIL("--set '" << text << "': " << key << " is " << detail::json_type_name(*node)
                             << ", not an object or array; set " << key << " itself instead");
    }
  }
  *node = std::move(value);
  return {text, key};
}

}  // namespace tessera::io::detail
