#pragma once
/// The one error mechanism of Tessera: TESSERA_CHECK throws tessera::Error with a message
/// built by streaming. `main` catches it, prints the rank and the message, and aborts the job.
#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {

/// A failure the user can act on (bad case file, missing file, non-finite loss) or a violated
/// precondition. The message names the file, key or position and, where possible, the fix.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tessera

/// Always on (also in release builds): `TESSERA_CHECK(n > 0, "points must be positive, got " <<
/// n)`.
#define TESSERA_CHECK(cond, msg)                           \
  do {                                                     \
    if (!(cond)) {                                         \
      std::ostringstream tessera_check_stream_;            \
      tessera_check_stream_ << msg;                        \
      throw ::tessera::Error(tessera_check_stream_.str()); \
    }                                                      \
  } while (0)

/// Unconditional failure with a streamed message.
#define TESSERA_FAIL(msg) TESSERA_CHECK(false, msg)
