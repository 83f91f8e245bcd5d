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

/// `what` names the file in messages: "case file", "--merge file".
std::string read_file(const std::string& path, const char* what) {
  std::error_code ec;
  TESSERA_CHECK(!fs::is_directory(path, ec),
                "cannot open " << what << " '" << path << "': it is a directory, not a JSON file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  TESSERA_CHECK(in.good(), "cannot open " << what << " '" << path << "': "
                                          << (errno ? std::strerror(errno) : "unreadable"));
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
  detail::check_field_networks(root, c);
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

namespace {

/// Where a key's value came from when not from the case file: "--set 'a.b=1'" or
/// "--merge 'overlay.json'", and the key path it set.
struct Origin {
  std::string source;
  std::string key;
};

/// The key paths a merge patch sets (its leaves; an array or an empty object is one leaf).
void patched_keys(const json& patch, const std::string& prefix, const std::string& source,
                  std::vector<Origin>& out) {
  for (const auto& [key, value] : patch.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object() && !value.empty())
      patched_keys(value, path, source, out);
    else
      out.push_back({source, path});
  }
}

Case validate(json document, const std::string& file, const std::vector<Origin>& origins) {
  Case c;
  c.file = file;
  const fs::path parent = fs::path(file).parent_path();
  c.folder = parent.empty() ? "." : parent.string();
  c.effective = std::move(document);
  try {
    read_case(detail::JsonNode(&c.effective, ""), c);
  } catch (const detail::KeyError& e) {
    std::string message = file + ": " + (e.key.empty() ? "" : e.key + ": ") + e.message;
    // Name the --set or --merge that put the bad value there: the user will look for it in the
    // file. The last one applied decides the value.
    for (auto it = origins.rbegin(); it != origins.rend(); ++it) {
      if (!e.key.empty() && key_within(e.key, it->key)) {
        message += " (from " + it->source + ")";
        break;
      }
    }
    throw Error(message);
  }
  return c;
}

json parse_text(const std::string& path, const std::string& text) {
  try {
    return json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw Error(syntax_error_message(path, text, e));
  }
}

std::vector<Origin> apply_overrides(json& document, const std::vector<std::string>& overrides) {
  std::vector<Origin> origins;
  for (const auto& text : overrides) {
    const auto applied = detail::apply_override(document, text);
    origins.push_back({"--set '" + applied.text + "'", applied.key});
  }
  return origins;
}

}  // namespace

Case case_from_json(json document, const std::string& file,
                    const std::vector<std::string>& overrides) {
  const auto origins = apply_overrides(document, overrides);
  return validate(std::move(document), file, origins);
}

Case load_case(const std::string& path, const std::vector<std::string>& overrides,
               const std::vector<std::string>& merges) {
  json document = parse_text(path, read_file(path, "case file"));
  std::vector<Origin> origins;
  for (const auto& overlay : merges) {
    const json patch = parse_text(overlay, read_file(overlay, "--merge file"));
    // A patch that is not an object would replace the whole case (RFC 7386).
    TESSERA_CHECK(patch.is_object(), overlay << ": --merge expects a JSON object {...} of the case "
                                                "keys to change, got "
                                             << detail::json_type_name(patch));
    document.merge_patch(patch);
    patched_keys(patch, "", "--merge '" + overlay + "'", origins);
  }
  for (auto& origin : apply_overrides(document, overrides)) origins.push_back(std::move(origin));
  return validate(std::move(document), path, origins);
}

}  // namespace tessera::io
