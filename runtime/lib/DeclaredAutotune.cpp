//===- DeclaredAutotune.cpp - The spec a kernel's @autotune declares
//-------===//
//
// Turns the front end's AutotuneDecl into an AutotuneSpec: the settings of
// each configuration split into constants and options, and a grid function
// that evaluates the declared prefix expressions ("(cdiv M BM)") per
// candidate. The front end has already checked names and operators, so the
// evaluator only has to read the text and refuse a division by zero.
//
// It also prunes tiles larger than the problem: where the grid divides a
// run-time extent by a constant (`cdiv(M, BM)`), a candidate whose tile is
// at least twice the extent is dropped when another candidate has a smaller
// tile there, so a small problem never compiles or times its largest tiles
// (and never loses every candidate).
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Autotune.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

/// Reads one prefix expression; names resolve through `lookup`.
class GridExpr {
public:
  GridExpr(const std::string &text,
           const std::function<int64_t(const std::string &)> &lookup)
      : text_(text), lookup_(lookup) {}

  int64_t eval() {
    skipSpaces();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      ++pos_;
      std::string op = word();
      int64_t a = eval(), b = eval();
      skipSpaces();
      ++pos_; // ')'
      return apply(op, a, b);
    }
    std::string w = word();
    if (!w.empty() &&
        (std::isdigit(static_cast<unsigned char>(w[0])) || w[0] == '-'))
      return std::strtoll(w.c_str(), nullptr, 10);
    return lookup_(w);
  }

private:
  int64_t apply(const std::string &op, int64_t a, int64_t b) const {
    if (op == "+")
      return a + b;
    if (op == "-")
      return a - b;
    if (op == "*")
      return a * b;
    if (op == "min")
      return std::min(a, b);
    if (op == "max")
      return std::max(a, b);
    if (b == 0)
      throw Error("autotune grid: division by zero in '" + text_ + "'");
    if (op == "/")
      return a / b;
    if (op == "%")
      return a % b;
    if (op == "cdiv")
      return (a + b - 1) / b;
    throw Error("autotune grid: unknown operator '" + op + "'");
  }
  void skipSpaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ')
      ++pos_;
  }
  std::string word() {
    skipSpaces();
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ' ' && text_[pos_] != '(' &&
           text_[pos_] != ')')
      ++pos_;
    return text_.substr(start, pos_ - start);
  }

  const std::string &text_;
  const std::function<int64_t(const std::string &)> &lookup_;
  size_t pos_ = 0;
};

int64_t constantValue(const std::string &name, const std::string &text) {
  if (text == "true")
    return 1;
  if (text == "false")
    return 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);
  if (text.empty() || *end)
    throw Error("autotune grid: constant '" + name + "' is '" + text +
                "', not an integer literal; set it in every configuration");
  return v;
}

/// A tile's value in a candidate: its own setting, else the default; -1
/// when neither is an integer literal (then it prunes nothing).
int64_t tileValue(const TuneConfig &c, const Constants &defaults,
                  const std::string &name) {
  auto it = c.constants.find(name);
  const std::string *text = it != c.constants.end() ? &it->second : nullptr;
  if (!text) {
    auto d = defaults.find(name);
    if (d == defaults.end())
      return -1;
    text = &d->second;
  }
  char *end = nullptr;
  long long v = std::strtoll(text->c_str(), &end, 0);
  return text->empty() || *end ? -1 : v;
}

/// `(cdiv X T)` in the grid with X a run-time parameter and T a constant:
/// the (X, T) pairs the pruning compares.
std::vector<std::pair<std::string, std::string>>
tiledExtents(const KernelSignature &sig) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const std::string tag = "(cdiv ";
  for (const std::string &g : sig.autotune.grid)
    for (size_t at = g.find(tag); at != std::string::npos;
         at = g.find(tag, at + 1)) {
      size_t a = at + tag.size(), sp = g.find(' ', a);
      size_t close = sp == std::string::npos ? sp : g.find(')', sp);
      if (close == std::string::npos)
        continue;
      std::string x = g.substr(a, sp - a), t = g.substr(sp + 1, close - sp - 1);
      bool isParam = false, isConst = false;
      for (const KernelParam &p : sig.params)
        isParam |= p.name == x;
      for (const ConstParam &c : sig.constants)
        isConst |= c.name == t;
      if (isParam && isConst)
        pairs.emplace_back(x, t);
    }
  return pairs;
}

} // namespace

AutotuneSpec sparsetile::rt::declaredSpec(const KernelSignature &sig) {
  if (!sig.hasAutotune)
    throw Error("kernel '" + sig.name + "' declares no @autotune");
  AutotuneSpec spec;
  const AutotuneDecl &d = sig.autotune;
  for (const auto &settings : d.configs) {
    TuneConfig c;
    for (const auto &[name, value] : settings) {
      int v = std::atoi(value.c_str());
      if (name == "num_warps")
        c.numWarps = v;
      else if (name == "num_stages")
        c.numStages = v;
      else if (name == "persistent")
        c.persistent = v;
      else if (name == "warp_specialize")
        c.warpSpecialize = v;
      else
        c.constants[name] = value;
    }
    spec.configs.push_back(std::move(c));
  }
  spec.key = d.key;
  spec.outputs = d.outputs;
  Constants defaults;
  for (const ConstParam &c : sig.constants)
    defaults[c.name] = c.defaultValue;
  std::vector<std::string> grid = d.grid;
  spec.grid = [grid, defaults](const Constants &constants,
                               const LaunchArgs &args) {
    std::function<int64_t(const std::string &)> lookup =
        [&](const std::string &name) -> int64_t {
      for (const Constants *m : {&constants, &defaults}) {
        auto it = m->find(name);
        if (it != m->end())
          return constantValue(name, it->second);
      }
      return args[name].intValue();
    };
    int64_t dims[3] = {1, 1, 1};
    for (size_t i = 0; i < grid.size() && i < 3; ++i) {
      dims[i] = GridExpr(grid[i], lookup).eval();
      if (dims[i] < 0 || dims[i] >= (int64_t(1) << 31))
        throw Error("autotune grid: size " + std::to_string(dims[i]) + " of '" +
                    grid[i] + "' is out of range");
    }
    return Dim3(unsigned(dims[0]), unsigned(dims[1]), unsigned(dims[2]));
  };
  auto pairs = tiledExtents(sig);
  if (pairs.empty())
    return spec;
  std::vector<TuneConfig> configs = spec.configs;
  spec.prune = [pairs, configs, defaults](const TuneConfig &c,
                                          const LaunchArgs &args) {
    for (const auto &[extent, tile] : pairs) {
      int64_t n = args[extent].intValue(), t = tileValue(c, defaults, tile);
      if (t < 0 || t < 2 * n)
        continue;
      for (const TuneConfig &other : configs) {
        int64_t o = tileValue(other, defaults, tile);
        if (o >= 0 && o < t)
          return false;
      }
    }
    return true;
  };
  return spec;
}
