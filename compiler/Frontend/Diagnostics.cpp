//===- Diagnostics.cpp - Located error messages ---------------------------===//

#include "Diagnostics.h"

namespace sparsetile {

/// Returns the 1-based line `line` of `source` without its newline.
static std::string sourceLine(const std::string &source, int line) {
  size_t begin = 0;
  for (int i = 1; i < line; ++i) {
    begin = source.find('\n', begin);
    if (begin == std::string::npos)
      return "";
    ++begin;
  }
  size_t end = source.find('\n', begin);
  return source.substr(begin, end == std::string::npos ? std::string::npos
                                                       : end - begin);
}

std::string Diagnostics::format(Loc loc, const char *severity,
                                const std::string &message) const {
  std::string out = file(loc.file);
  if (loc.line > 0)
    out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  out += ": ";
  out += severity;
  out += ": ";
  out += message;
  out += "\n";
  if (loc.line <= 0)
    return out;
  std::string line = sourceLine(fileText(loc.file), loc.line);
  // Tabs in the source line would misplace the caret; show them as spaces.
  for (char &c : line)
    if (c == '\t')
      c = ' ';
  out += "  " + line + "\n";
  out += "  " + std::string(loc.col > 1 ? loc.col - 1 : 0, ' ') + "^\n";
  return out;
}

void Diagnostics::report(Loc loc, const char *kind,
                         const std::string &message) {
  text += format(loc, kind, message);
}

void Diagnostics::error(Loc loc, const std::string &message) {
  ++errorCount;
  report(loc, "error", message);
}

void Diagnostics::note(Loc loc, const std::string &message) {
  report(loc, "note", message);
}

void Diagnostics::error(const std::string &message) {
  ++errorCount;
  report(Loc{}, "error", message);
}

} // namespace sparsetile
