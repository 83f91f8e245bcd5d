// Loading a case file: reading and parsing the JSON, applying --set overrides, validating, and
// turning the first mistake into one line that names the file, the key and the fix.
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tessera/core/error.hpp"
#include "tessera/io/case.hpp"
#include "tessera/io/case_detail.hpp"
#include "tessera/io/case_overrides.hpp"

namespace tessera::io {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::error_code ec;
  TESSERA_CHECK(!fs::is_directory(path, ec),
                "cannot open case file '" << path << "': it is a directory, not a JSON file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  TESSERA_CHECK(in.good(), "cannot open case file '"
                               << path << "': " << (errno ? std::strerror(errno) : "unreadable"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// "cases/p.json:12:5: JSON syntax error: unexpected '}'; expected string literal (while parsing
/// object key; remove the trailing comma before it)".
std::string syntax_error_message(const std::string& file, const std::string& text,
                                 const json::parse_error& e) {
  std::string what = e.what();
  std::smatch m;
  std::string line = "?", column = "?";
  if (std::regex_search(what, m, std::regex("at line ([0-9]+), column ([0-9]+): "))) {
    line = m[1];
    column = m[2];
    what = m.suffix();
  }
  std::string context;
  if (std::regex_search(what, m, std::regex("^syntax error while parsing ([a-z ]+) - "))) {
    context = "while parsing " + std::string(m[1]);
    what = m.suffix();
  }
  // The most common hand-editing slip: a comma before a closing bracket.
  if (e.byte >= 1 && e.byte <= text.size() &&
      (text[e.byte - 1] == '}' || text[e.byte - 1] == ']')) {
    std::size_t i = e.byte - 1;
    while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
    if (i > 0 && text[i - 1] == ',')
      context += std::string(context.empty() ? "" : "; ") + "remove the trailing comma before it";
  }
  for (char& ch : what)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return file + ":" + line + ":" + column + ": JSON syntax error: " + what +
         (context.empty() ? "" : " (" + context + ")");
}

bool key_within(const std::string& key, const std::string& prefix) {
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  return key.size() == prefix.size() || key[prefix.size()] == '.' || key[prefix.size()] == '[';
}

void read_case(const detail::JsonNode& root, Case& c) {
  if (!root.value().is_object())
    root.fail("a case file must be one JSON object {...}, got " + root.type_name());
  root.check_object(keys_at(""));
  detail::read_symbols(root, c);
  detail::read_geometry(root, c);
  detail::read_equations(root, c);
  detail::read_conditions(root, c);
  detail::read_decomposition(root, c);
  detail::read_network_section(root, c);
  detail::read_subdomains(root, c);
  detail::read_training(root, c);
  detail::read_output(root, c);
}

}  // namespace

namespace detail {

std::string resolve_against_case(const Case& c, const std::string& path) {
  const fs::path p(path);
  if (p.is_absolute()) return path;
  return (fs::path(c.folder) / p).lexically_normal().string();
}

std::vector<std::string> coordinates_and_time(const Case& c) {
  std::vector<std::string> out = c.coordinates;
  if (c.time) out.push_back(c.time->name);
  return out;
}

}  // namespace detail

Case case_from_json(json document, const std::string& file,
                    const std::vector<std::string>& overrides) {
  std::vector<detail::AppliedOverride> applied;
  for (const auto& text : overrides) applied.push_back(detail::apply_override(document, text));

  Case c;
  c.file = file;
  const fs::path parent = fs::path(file).parent_path();
  c.folder = parent.empty() ? "." : parent.string();
  c.effective = std::move(document);
  try {
    read_case(detail::JsonNode(&c.effective, ""), c);
  } catch (const detail::KeyError& e) {
    std::string message = file + ": " + (e.key.empty() ? "" : e.key + ": ") + e.message;
    // Name the --set that put the bad value there: the user will look for it in the file.
    for (auto it = applied.rbegin(); it != applied.rend(); ++it) {
      if (!e.key.empty() && key_within(e.key, it->key)) {
        message += " (from --set '" + it->text + "')";
        break;
      }
    }
    throw Error(message);
  }
  return c;
}

Case load_case(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = read_file(path);
  json document;
  try {
    document = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw Error(syntax_error_message(path, text, e));
  }
  return case_from_json(std::move(document), path, overrides);
}

}  // namespace tessera::io
