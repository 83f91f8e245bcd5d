#pragma once
/// Small text helpers shared by every module that reports user mistakes.
#include <optional>
#include <string>
#include <vector>

namespace tessera::core {

/// Levenshtein edit distance between two strings.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The closest candidate to `word` when it is close enough to be a likely typo, else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" when nothing is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

/// Bytes from "2147483648", "2G" or "512M" (K, M, G, T: powers of 1024); nullopt when the text
/// is not a positive size.
std::optional<double> parse_byte_size(const std::string& text);

}  // namespace tessera::core
