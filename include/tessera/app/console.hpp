#pragma once
/// What a person sees of a run: rank 0's messages on standard output (the other ranks'
/// are dropped, so no command prints N copies), and warnings from any rank on standard error.
#include <ostream>
#include <string>

namespace tessera::app {

class Console {
 public:
  explicit Console(bool root);
  /// Standard output on rank 0, a stream that discards everything elsewhere.
  std::ostream& out() { return *out_; }
  bool root() const { return root_; }
  /// "tessera: warning: <text>" on standard error, from whichever rank calls it.
  void warning(const std::string& text) const;

 private:
  bool root_;
  std::ostream* out_;
};

}  // namespace tessera::app
