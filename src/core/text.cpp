#include "tessera/core/text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace tessera::core {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {
std::string strip_underscores_lower(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const auto& candidate : candidates) {
    // "uxx" vs "u_xx": an underscore or case slip counts as an exact match.
    std::size_t d = strip_underscores_lower(word) == strip_underscores_lower(candidate)
                        ? 0
                        : edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  const std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
  return best_distance <= allowed ? best : std::string();
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string match = closest_match(word, candidates);
  return match.empty() ? std::string() : " (did you mean '" + match + "'?)";
}

std::optional<double> parse_byte_size(const std::string& text) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  const std::string suffix = end ? end : "";
  const std::string units = "KMGT";
  const auto unit = suffix.size() == 1 ? units.find(static_cast<char>(std::toupper(suffix[0])))
                                       : std::string::npos;
  if (end == text.c_str() || !(value > 0) || (!suffix.empty() && unit == std::string::npos))
    return std::nullopt;
  if (!suffix.empty()) value *= std::pow(1024.0, static_cast<double>(unit + 1));
  return value;
}

}  // namespace tessera::core
