#include <cctype>
#include <string>

#include "hdf5_handle.hpp"

namespace tessera::io::detail {

namespace {

struct Innermost {
  std::string function;
  std::string description;
  bool found = false;
};

herr_t keep_innermost(unsigned, const H5E_error2_t* entry, void* data) {
  auto* innermost = static_cast<Innermost*>(data);
  innermost->function = entry->func_name ? entry->func_name : "";
  innermost->description = entry->desc ? entry->desc : "";
  innermost->found = true;
  return 1;  // walking upward, the first entry is the innermost: stop there
}

/// Whitespace runs (MPI error strings span lines) as one space.
std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      out += c;
    } else if (!out.empty() && out.back() != ' ') {
      out += ' ';
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

/// An MPI error string quotes the library's whole error stack ("MPI error string is 'Other I/O
/// error , error stack:\nADIOI_GEN_WRITECONTIG(80): Other I/O error No space left on device'");
/// its last line is the cause. The system drivers quote errno as "error message = '...'".
std::string shorten(const std::string& description) {
  const std::string mpi = "MPI error string is '";
  if (const auto at = description.find(mpi); at != std::string::npos) {
    std::string quoted = description.substr(at + mpi.size());
    if (!quoted.empty() && quoted.back() == '\'') quoted.pop_back();
    const auto last_line = quoted.find_last_of('\n');
    std::string cause = last_line == std::string::npos ? quoted : quoted.substr(last_line + 1);
    if (const auto colon = cause.find("): "); colon != std::string::npos)
      cause = cause.substr(colon + 3);
    return description.substr(0, at) + cause;
  }
  const std::string system = "error message = '";
  if (const auto at = description.find(system); at != std::string::npos) {
    const auto end = description.find('\'', at + system.size());
    const auto first = description.find(':');
    const std::string what = first == std::string::npos ? "" : description.substr(0, first + 2);
    return what + description.substr(at + system.size(), end - at - system.size());
  }
  return description;
}

}  // namespace

std::string hdf5_failure_reason() {
  Innermost innermost;
  if (H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &innermost) < 0 || !innermost.found)
    return "";
  std::string reason = one_line(shorten(innermost.description));
  // A reason is for a person: a runaway error string must not bury the line it ends.
  constexpr std::size_t longest = 300;
  if (reason.size() > longest) reason = reason.substr(0, longest) + "...";
  if (!innermost.function.empty()) reason += " (" + innermost.function + ")";
  return reason;
}

}  // namespace tessera::io::detail
