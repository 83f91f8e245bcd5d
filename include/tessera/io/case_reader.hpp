#pragma once
/// Reading one key of a case document with its key path, for the case loader (src/io/case_*.cpp).
/// Internal to io; exposed as a header so the loader's files share it and tests can use it.
///
/// A JsonNode is a (possibly absent) value plus the key path it was found at, e.g.
/// "training.stages[0].iterations". Every typed read checks the type and range and, on a
/// mistake, throws KeyError; case_from_json turns that into one line naming the file, the key,
/// what is wrong and the fix.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/io/case.hpp"
#include "tessera/io/case_options.hpp"

namespace tessera::io::detail {

/// A mistake at one key. `key` is the path ("" for the whole document); `message` says what is
/// wrong and the fix, without the file name (case_from_json adds it).
struct KeyError {
  std::string key;
  std::string message;
};

/// Which numbers a key accepts.
enum class Range { any, positive, non_negative };

class JsonNode {
 public:
  /// `value` null: the key is absent (reads then use their fallback or report a missing key).
  /// The node does not own the value; the document must outlive it.
  JsonNode(const nlohmann::json* value, std::string key) : value_(value), key_(std::move(key)) {}

  bool present() const { return value_ != nullptr; }
  const nlohmann::json& value() const;  // precondition: present()
  const std::string& key() const { return key_; }

  /// The key path of a member / element of this node ("a.b", "a[3]").
  std::string member_key(const std::string& name) const;
  std::string element_key(std::size_t index) const;

  // --- structure -------------------------------------------------------------------------
  /// The member `name` of this object (absent when missing). Fails unless this is an object.
  JsonNode operator[](const std::string& name) const;
  /// The member `name`, which must exist; `fix` says what to add ("a string naming the run").
  JsonNode required(const std::string& name, const std::string& fix) const;
  /// Fails unless this is an object whose keys are all in `allowed` (unknown keys get a
  /// "did you mean" hint, or the list of valid keys when nothing is close).
  void check_object(const std::vector<std::string>& allowed) const;
  /// The elements of an array with at least `min_size` of them (`what` names one, for messages).
  std::vector<JsonNode> elements(std::size_t min_size = 0, const std::string& what = "entry") const;
  /// The members of an object, in document order of nlohmann (sorted by key).
  std::vector<std::pair<std::string, JsonNode>> members() const;

  // --- values ------------------------------------------------------------------------------
  // Each read fails when the node is absent and no fallback is given.
  std::string string(std::optional<std::string> fallback = std::nullopt) const;
  /// One of `options`; otherwise lists them (with a "did you mean" hint).
  std::string choice(const std::vector<std::string>& options,
                     std::optional<std::string> fallback = std::nullopt) const;
  /// One of E's spellings (case_options.hpp) as the enum; otherwise lists them. `allowed`
  /// narrows the spellings accepted here (empty: all of them).
  template <typename E>
  E option(std::optional<E> fallback = std::nullopt, std::vector<E> allowed = {}) const {
    if (!value_ && fallback) return *fallback;
    std::vector<std::string> spellings;
    if (allowed.empty())
      spellings = names_of<E>();
    else
      for (E e : allowed) spellings.push_back(name(e));
    E value{};
    parse_option(choice(spellings), value);  // choice() accepts only E's spellings
    return value;
  }
  /// The same with a default for an absent key.
  template <typename E>
  E option(E fallback) const {
    return option<E>(std::optional<E>(fallback));
  }
  double number(Range range = Range::any, std::optional<double> fallback = std::nullopt) const;
  /// An integer >= `min` (a number with an integral value, such as 1e3, is accepted).
  int64_t integer(int64_t min, std::optional<int64_t> fallback = std::nullopt) const;
  uint64_t unsigned_integer(std::optional<uint64_t> fallback = std::nullopt) const;
  bool boolean(std::optional<bool> fallback = std::nullopt) const;
  /// An expression: a string, or a number (kept as its JSON text).
  ExpressionText expression() const;

  /// Throws KeyError at this node's key.
  [[noreturn]] void fail(const std::string& message) const;
  /// The value as JSON text for "got ..." (shortened when long); "nothing" when absent.
  std::string describe() const;
  /// "a string", "a number", "an array", ... for type messages.
  std::string type_name() const;

 private:
  void require_present() const;
  const nlohmann::json* value_;
  std::string key_;
};

/// "a string", "a number", "an object", ... for type messages.
std::string json_type_name(const nlohmann::json& value);
/// "'a', 'b', 'c'" for messages.
std::string quoted_list(const std::vector<std::string>& words);
/// core::did_you_mean, except for one-letter words (any one-letter name is "close" to 'x').
std::string suggest(const std::string& word, const std::vector<std::string>& candidates);
/// A number as people write it: 0.5, 2, 1e-06.
std::string number_text(double value);
/// ASCII letter followed by letters and digits (no '_': it introduces derivative suffixes).
bool is_plain_identifier(const std::string& word);

}  // namespace tessera::io::detail
