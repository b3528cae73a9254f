//===- Imports.cpp - `import "file.tile";` --------------------------------===//
//
// Implements Imports.h. The search is depth-first over the import graph with
// the chain of files being imported on a stack, which is what a cycle error
// prints. Imported files' kernels are not merged: an import brings functions
// and constants only.
//
//===----------------------------------------------------------------------===//

#include "Imports.h"
#include "Parser.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sparsetile {

std::string importPath(const std::string &importer, const std::string &path) {
  std::filesystem::path p(path);
  if (p.is_relative())
    p = std::filesystem::path(importer).parent_path() / p;
  return p.lexically_normal().string();
}

bool readImportFile(const std::string &path, std::string &content,
                    std::string &why) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it hung the
  // host process); fstat then refuses it, a directory and a device
  // (`import "/dev/zero"` grew to 6 GB), before anything is read.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0;
  if (!ok) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
    ok = false;
  } else if (uint64_t(st.st_size) > kMaxImportBytes) {
    why = "larger than " + std::to_string(kMaxImportBytes) + " bytes";
    ok = false;
  }
  // The cap bounds the reading too, not only st_size: the file may grow.
  content.clear();
  char buf[65536];
  while (ok) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      why = std::strerror(errno);
      ok = false;
    } else if (n == 0) {
      break;
    } else if (content.size() + size_t(n) > kMaxImportBytes) {
      why = "larger than " + std::to_string(kMaxImportBytes) + " bytes";
      ok = false;
    } else {
      content.append(buf, size_t(n));
    }
  }
  ::close(fd);
  return ok;
}

namespace {

struct Resolver {
  std::map<std::string, std::string> &texts;
  Diagnostics &diags;
  ast::Module &root;
  std::vector<std::string> chain; ///< Files being imported, outermost first.
  std::set<std::string> merged;

  bool read(const std::string &path, Loc loc, const std::string *&text) {
    auto it = texts.find(path);
    if (it == texts.end()) {
      std::string content, why;
      if (!readImportFile(path, content, why)) {
        diags.error(loc, "cannot read imported file '" + path + "': " + why);
        return false;
      }
      it = texts.emplace(path, std::move(content)).first;
    }
    if (it->second.size() > kMaxImportBytes) { // A caller's text, too.
      diags.error(loc, "imported file '" + path + "' is larger than " +
                           std::to_string(kMaxImportBytes) + " bytes");
      return false;
    }
    text = &it->second;
    return true;
  }

  bool visit(const std::vector<ast::Import> &imports,
             const std::string &importer) {
    for (const ast::Import &imp : imports) {
      // Only .tile files: a parse error in an import shows its line, so an
      // import of another file (`import "/etc/passwd"`) would print the
      // file's content in the error. Checked before anything is opened.
      const std::string ext = ".tile";
      if (imp.path.size() < ext.size() ||
          imp.path.compare(imp.path.size() - ext.size(), ext.size(), ext)) {
        diags.error(imp.loc, "an import must name a .tile file");
        return false;
      }
      std::string path = importPath(importer, imp.path);
      if (std::find(chain.begin(), chain.end(), path) != chain.end()) {
        std::string cycle;
        bool on = false;
        for (const std::string &c : chain) {
          on = on || c == path;
          if (on)
            cycle += c + " -> ";
        }
        diags.error(imp.loc, "import cycle: " + cycle + path);
        return false;
      }
      if (!merged.insert(path).second)
        continue;
      const std::string *text;
      if (!read(path, imp.loc, text))
        return false;
      int id = diags.addFile(path, *text);
      ast::Module sub;
      if (!parseModule(*text, diags, sub, id))
        return false;
      chain.push_back(path);
      if (!visit(sub.imports, path))
        return false;
      chain.pop_back();
      for (auto &c : sub.constants)
        root.constants.push_back(std::move(c));
      for (auto &f : sub.functions)
        root.functions.push_back(std::move(f));
    }
    return true;
  }
};

} // namespace

bool resolveImports(ast::Module &module, const std::string &filename,
                    std::map<std::string, std::string> &texts,
                    Diagnostics &diags) {
  Resolver r{texts, diags, module, {importPath("", filename)}, {}};
  std::vector<ast::Import> imports = std::move(module.imports);
  module.imports.clear();
  bool ok = r.visit(imports, filename);
  module.imports = std::move(imports);
  return ok;
}

} // namespace sparsetile
