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
#include <vector>

namespace sparsetile {

/// A 1-based position in a source file. line == 0 means "no location".
struct Loc {
  int line = 0;
  int col = 0;
  /// Which of the Diagnostics' files: 0 is the main file, imported files
  /// (`import "x.tile";`) get the ids addFile returns.
  int file = 0;
};

class Diagnostics {
public:
  Diagnostics(std::string filename, std::string source) {
    files.push_back({std::move(filename), std::move(source)});
  }

  /// Registers another file (an import) so that its locations print with
  /// its own name and lines; returns the id to put in their Loc::file.
  int addFile(std::string filename, std::string source) {
    files.push_back({std::move(filename), std::move(source)});
    return int(files.size()) - 1;
  }

  /// Records an error at `loc`, with the source line and a caret under it.
  void error(Loc loc, const std::string &message);
  /// Records a note (same format, "note:" instead of "error:").
  void note(Loc loc, const std::string &message);
  /// Records an error with no source position ("file: error: ...").
  void error(const std::string &message);

  /// The text `error` would record, with `severity` ("remark", "error")
  /// instead, without recording it (performance remarks: Pipeline.cpp).
  std::string format(Loc loc, const char *severity,
                     const std::string &message) const;
  /// The id of the file named `name` (as file() gives it), else 0.
  int fileId(const std::string &name) const {
    for (size_t i = 0; i < files.size(); ++i)
      if (files[i].name == name)
        return int(i);
    return 0;
  }

  bool hadError() const { return errorCount > 0; }
  int errors() const { return errorCount; }
  const std::string &str() const { return text; }
  const std::string &file(int id = 0) const {
    return files[id >= 0 && size_t(id) < files.size() ? id : 0].name;
  }
  const std::string &fileText(int id = 0) const {
    return files[id >= 0 && size_t(id) < files.size() ? id : 0].text;
  }

private:
  void report(Loc loc, const char *kind, const std::string &message);

  struct File {
    std::string name;
    std::string text;
  };
  std::vector<File> files;
  std::string text;
  int errorCount = 0;
};

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_DIAGNOSTICS_H
