//===- Autotune.cpp - Check and read a kernel's @autotune -----------------===//
//
// Implements checkAutotune and autotuneDecl (Autotune.h). The checks run on
// the AST with the kernel's parameters known, before the body is parsed:
//   1. the arguments: configs (non-empty), grid (1-3 sizes) and key given;
//   2. the key: integer run-time parameters, each once;
//   3. each configuration: integer constants and the four options, each
//      once, with values in range; no configuration repeated;
//   4. the grid: integer expressions of literals, integer parameters and
//      constants, + - * / %, cdiv, min and max (the runtime evaluates them
//      per candidate, so they stay in a subset it can read without MLIR).
//
//===----------------------------------------------------------------------===//

#include "Frontend/Autotune.h"

#include <map>
#include <set>

using namespace sparsetile;

namespace {

/// Options a configuration may set besides constants, and their ranges.
struct TuneOption {
  const char *name;
  int64_t lo, hi;
  bool powerOfTwo;
};
constexpr TuneOption kOptions[] = {
    {"num_warps", 1, 32, true},
    {"num_stages", 1, 8, false},
    {"persistent", 0, 1, false},
    {"warp_specialize", 0, 1, false},
};

bool isInteger(DType t) {
  return dtypeIsInteger(t);
}

const ast::Param *findParam(const ast::Kernel &k, const std::string &name) {
  for (const ast::Param &p : k.params)
    if (p.name == name)
      return &p;
  return nullptr;
}

/// A run-time integer scalar (`n: i32`), the only kind the key and the grid
/// can read at launch.
bool isIntegerScalar(const ast::Param *p) {
  return p && !p->isConst && !p->isPointer && !p->isDesc &&
         p->typeRef.empty() && isInteger(p->dtype);
}

bool isIntegerConstant(const ast::Param *p) {
  return p && p->isConst && !p->isTypeParam &&
         (isInteger(p->dtype) || p->dtype == DType::I1);
}

class Checker {
public:
  Checker(const ast::Kernel &k, Diagnostics &d) : kernel(k), diags(d) {}

  bool run() {
    const ast::AutotuneAttr &t = *kernel.autotune;
    if (t.configs.empty())
      return fail(t.loc, "@autotune needs configs=[{...}, ...] with at least "
                         "one configuration");
    if (t.grid.empty() || t.grid.size() > 3)
      return fail(t.loc, "@autotune needs grid=[...] with 1 to 3 sizes (the "
                         "launch grid of a candidate, e.g. cdiv(M, BM))");
    if (!t.keyGiven)
      return fail(t.loc, "@autotune needs key=[...]: the integer parameters "
                         "whose values pick a winner (key=[] tunes once)");
    std::set<std::string> keys;
    for (const auto &[name, loc] : t.key) {
      if (!isIntegerScalar(findParam(kernel, name)))
        return fail(loc, "autotune key '" + name +
                             "' is not an integer run-time parameter of '" +
                             kernel.name + "'");
      if (!keys.insert(name).second)
        return fail(loc, "autotune key '" + name + "' is named twice");
    }
    for (size_t i = 0; i < t.configs.size(); ++i)
      if (!checkConfig(i))
        return false;
    for (const ast::ExprPtr &e : t.grid)
      if (!gridExpr(*e, nullptr))
        return false;
    return true;
  }

  /// Prefix text of a checked grid expression (AutotuneDecl::grid).
  bool gridExpr(const ast::Expr &e, std::string *out) {
    using ast::Expr;
    static const std::set<std::string> binary = {"+", "-", "*", "/", "%"};
    static const std::set<std::string> calls = {"cdiv", "min", "max"};
    std::string a, b;
    switch (e.kind) {
    case Expr::IntLit:
      if (out)
        *out = std::to_string(e.intValue);
      return true;
    case Expr::Name: {
      const ast::Param *p = findParam(kernel, e.name);
      if (!isIntegerScalar(p) &&
          !(isIntegerConstant(p) && p->dtype != DType::I1))
        return fail(e.loc, "'" + e.name +
                               "' in the grid is not an integer "
                               "parameter or constant of '" +
                               kernel.name + "'");
      if (out)
        *out = e.name;
      return true;
    }
    case Expr::Binary:
    case Expr::Call: {
      // Both are `(op a b)`: an operator, or a two-argument function.
      bool isBinary = e.kind == Expr::Binary;
      if (isBinary ? !binary.count(e.op)
                   : !calls.count(e.name) || e.isMethod ||
                         e.operands.size() != 2 || !e.kwargs.empty())
        break;
      if (!gridExpr(*e.operands[0], out ? &a : nullptr) ||
          !gridExpr(*e.operands[1], out ? &b : nullptr))
        return false;
      if (out)
        *out = "(" + (isBinary ? e.op : e.name) + " " + a + " " + b + ")";
      return true;
    }
    default:
      break;
    }
    return fail(e.loc, "a grid size is an integer expression of literals, "
                       "integer parameters and constants, + - * / %, "
                       "cdiv(a, b), min(a, b) and max(a, b)");
  }

private:
  bool fail(Loc loc, const std::string &message) {
    diags.error(loc, message);
    return false;
  }

  bool checkConfig(size_t index) {
    const auto &config = kernel.autotune->configs[index];
    std::set<std::string> names;
    for (const ast::TuneSetting &s : config) {
      if (!names.insert(s.name).second)
        return fail(s.loc, "'" + s.name +
                               "' is set twice in this "
                               "configuration");
      if (!checkSetting(s))
        return false;
    }
    for (size_t j = 0; j < index; ++j) {
      if (settings(j) != settings(index))
        continue;
      diags.error(kernel.autotune->configLocs[index],
                  "this configuration repeats configuration " +
                      std::to_string(j + 1));
      diags.note(kernel.autotune->configLocs[j],
                 "configuration " + std::to_string(j + 1) + " is here");
      return false;
    }
    return true;
  }

  std::map<std::string, int64_t> settings(size_t index) const {
    std::map<std::string, int64_t> m;
    for (const ast::TuneSetting &s : kernel.autotune->configs[index])
      m[s.name] = s.value;
    return m;
  }

  bool checkSetting(const ast::TuneSetting &s) {
    for (const TuneOption &o : kOptions) {
      if (s.name != o.name)
        continue;
      bool pow2 = s.value > 0 && (s.value & (s.value - 1)) == 0;
      if (s.value < o.lo || s.value > o.hi || (o.powerOfTwo && !pow2))
        return fail(s.loc, std::string(o.name) + " must be " +
                               (o.powerOfTwo ? "a power of two " : "") +
                               "from " + std::to_string(o.lo) + " to " +
                               std::to_string(o.hi) + ", got " +
                               std::to_string(s.value));
      return true;
    }
    const ast::Param *p = findParam(kernel, s.name);
    if (!isIntegerConstant(p))
      return fail(s.loc, "'" + s.name +
                             "' is neither an integer constant of '" +
                             kernel.name +
                             "' nor an option (num_warps, num_stages, "
                             "persistent, warp_specialize)");
    int bits = p->dtype == DType::I1 ? 1 : dtypeSize(p->dtype) * 8;
    bool uns = dtypeIsUnsigned(p->dtype);
    bool fits = bits == 1    ? (s.value == 0 || s.value == 1)
                : bits == 64 ? !(uns && s.value < 0)
                : uns        ? s.value >= 0 && s.value < (int64_t(1) << bits)
                             : s.value >= -(int64_t(1) << (bits - 1)) &&
                                   s.value < (int64_t(1) << (bits - 1));
    if (!fits)
      return fail(s.loc, "value " + std::to_string(s.value) + " of '" + s.name +
                             "' does not fit its type " + dtypeName(p->dtype));
    return true;
  }

  const ast::Kernel &kernel;
  Diagnostics &diags;
};

/// Every name an expression mentions.
void namesIn(const ast::Expr &e, std::set<std::string> &out) {
  if (e.kind == ast::Expr::Name)
    out.insert(e.name);
  for (const ast::ExprPtr &o : e.operands)
    namesIn(*o, out);
  for (const ast::KwArg &k : e.kwargs)
    namesIn(*k.value, out);
}

/// Walks statements and expressions: the pointer argument of every `store`
/// into `stored`, and every value bound to a name into `bindings`.
struct StoreScan {
  std::set<std::string> stored;
  std::multimap<std::string, const ast::Expr *> bindings;

  void expr(const ast::Expr &e) {
    if (e.kind == ast::Expr::Call && e.name == "store" && !e.operands.empty())
      namesIn(*e.operands[0], stored);
    for (const ast::ExprPtr &o : e.operands)
      expr(*o);
    for (const ast::KwArg &k : e.kwargs)
      expr(*k.value);
  }
  void block(const ast::Block &b) {
    for (const ast::StmtPtr &s : b) {
      for (const ast::Expr *e :
           {s->value.get(), s->lo.get(), s->hi.get(), s->step.get()})
        if (e)
          expr(*e);
      if ((s->kind == ast::Stmt::Let || s->kind == ast::Stmt::Assign) &&
          s->value)
        bindings.emplace(s->name, s->value.get());
      block(s->body);
      block(s->elseBody);
    }
  }
};

} // namespace

bool sparsetile::checkAutotune(const ast::Kernel &kernel, Diagnostics &diags) {
  return Checker(kernel, diags).run();
}

AutotuneDecl sparsetile::autotuneDecl(const ast::Kernel &kernel) {
  AutotuneDecl d;
  const ast::AutotuneAttr &t = *kernel.autotune;
  for (const auto &config : t.configs) {
    std::map<std::string, std::string> m;
    for (const ast::TuneSetting &s : config)
      m[s.name] = std::to_string(s.value);
    d.configs.push_back(std::move(m));
  }
  for (const auto &k : t.key)
    d.key.push_back(k.first);
  Diagnostics unused("", "");
  Checker c(kernel, unused);
  for (const ast::ExprPtr &e : t.grid) {
    std::string text;
    c.gridExpr(*e, &text);
    d.grid.push_back(text);
  }
  // Outputs: the pointer parameters a store's pointer argument reaches
  // through any chain of `let`s and rebindings. Scope is ignored (a name
  // shadowed elsewhere only adds candidates), so the set can only be too
  // large: a scratch copy too many costs memory, one too few would let a
  // losing candidate write the caller's buffer.
  StoreScan scan;
  scan.block(kernel.body);
  std::set<std::string> reached = scan.stored;
  std::vector<std::string> work(reached.begin(), reached.end());
  while (!work.empty()) {
    std::string n = work.back();
    work.pop_back();
    auto range = scan.bindings.equal_range(n);
    for (auto it = range.first; it != range.second; ++it) {
      std::set<std::string> more;
      namesIn(*it->second, more);
      for (const std::string &m : more)
        if (reached.insert(m).second)
          work.push_back(m);
    }
  }
  for (const ast::Param &p : kernel.params)
    if (p.isPointer && reached.count(p.name))
      d.outputs.push_back(p.name);
  return d;
}
