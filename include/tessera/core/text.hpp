#pragma once
/// Small text helpers shared by every module that reports user mistakes.
#include <string>
#include <vector>

namespace tessera::core {

/// Levenshtein edit distance between two strings.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The closest candidate to `word` when it is close enough to be a likely typo, else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" when nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tessera::core
