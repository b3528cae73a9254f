//===- Diagnostics.h - Located error messages for DSL source ----*- C++ -*-===//
//
// Every error about a .tile file is reported through this class so that each
// one has the same shape:
//
//   file.tile:3:14: error: unknown name 'offz'
//     let x = load(offz);
//                  ^
//
// The compiler never throws and never aborts on bad input; passes report here
// and return failure, and the driver hands `str()` back to the caller.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_DIAGNOSTICS_H
#define SPARSETILE_FRONTEND_DIAGNOSTICS_H

#include <string>

namespace sparsetile {

/// A 1-based position in a source file. line == 0 means "no location".
struct Loc {
  int line = 0;
  int col = 0;
};

class Diagnostics {
public:
  Diagnostics(std::string filename, std::string source)
      : filename(std::move(filename)), source(std::move(source)) {}

  /// Records an error at `loc`, with the source line and a caret under it.
  void error(Loc loc, const std::string &message);
  /// Records a note (same format, "note:" instead of "error:").
  void note(Loc loc, const std::string &message);
  /// Records an error with no source position ("file: error: ...").
  void error(const std::string &message);

  bool hadError() const { return errorCount > 0; }
  int errors() const { return errorCount; }
  const std::string &str() const { return text; }
  const std::string &file() const { return filename; }

private:
  void report(Loc loc, const char *kind, const std::string &message);

  std::string filename;
  std::string source;
  std::string text;
  int errorCount = 0;
};

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_DIAGNOSTICS_H
