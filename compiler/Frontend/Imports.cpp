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
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace sparsetile {

std::string importPath(const std::string &importer, const std::string &path) {
  std::filesystem::path p(path);
  if (p.is_relative())
    p = std::filesystem::path(importer).parent_path() / p;
  return p.lexically_normal().string();
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
      std::ifstream in(path, std::ios::binary);
      if (!in) {
        diags.error(loc, "cannot read imported file '" + path + "'");
        return false;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      it = texts.emplace(path, ss.str()).first;
    }
    text = &it->second;
    return true;
  }

  bool visit(const std::vector<ast::Import> &imports,
             const std::string &importer) {
    for (const ast::Import &imp : imports) {
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
