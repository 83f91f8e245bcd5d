#pragma once
/// Tessera's two tiers of checks.
///
/// - TESSERA_CHECK / TESSERA_FAIL: a failure the user can act on (bad case file, missing file,
///   non-finite loss). Throws tessera::Error; the message names the file, key or position and
///   the fix.
/// - TESSERA_ASSERT / TESSERA_UNREACHABLE: an internal invariant of the code. Throws
///   tessera::InternalError with the source file and line, since no user action causes it.
///
/// Both are always on (also in release builds). `main` catches them, prints the rank and the
/// message, and ends the whole job.
#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {

/// A failure the user can act on, or a violated precondition of a public function.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A broken internal invariant: a bug in Tessera, reported with where it was detected.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
[[noreturn]] void throw_internal_error(const char* file, int line, const std::string& message);
}  // namespace detail

}  // namespace tessera

/// `TESSERA_CHECK(n > 0, "points must be positive, got " << n)`.
#define TESSERA_CHECK(cond, msg)                           \
  do {                                                     \
    if (!(cond)) {                                         \
      std::ostringstream tessera_check_stream_;            \
      tessera_check_stream_ << msg;                        \
      throw ::tessera::Error(tessera_check_stream_.str()); \
    }                                                      \
  } while (0)

/// Unconditional user-facing failure with a streamed message.
#define TESSERA_FAIL(msg) TESSERA_CHECK(false, msg)

/// `TESSERA_ASSERT(rows == cols, "square matrix expected, got " << rows << "x" << cols)`.
#define TESSERA_ASSERT(cond, msg)                                                                \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::ostringstream tessera_assert_stream_;                                                 \
      tessera_assert_stream_ << msg;                                                             \
      ::tessera::detail::throw_internal_error(__FILE__, __LINE__, tessera_assert_stream_.str()); \
    }                                                                                            \
  } while (0)

/// A branch that the invariants exclude.
#define TESSERA_UNREACHABLE(msg) TESSERA_ASSERT(false, msg)
