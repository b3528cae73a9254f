//===- KernelConstants.cpp - A kernel's `const` values, without MLIR ------===//
//
// Implements kernelConstants: each `const` parameter's value, given or
// default. A default is an expression over literals, earlier constants and
// file-level constants; it is evaluated here on the AST, the way MLIRGen
// folds it while it emits (Frontend/MLIRGen.cpp, "constants"), so that a
// caller learns the values without compiling. Integers are computed in 64
// bits and wrapped to the parameter's width at the end; f32 values are
// rounded to f32. An expression outside that subset is reported as unknown,
// never guessed.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/KernelConstants.h"
#include "Frontend/AST.h"
#include "Frontend/Diagnostics.h"
#include "Frontend/Parser.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

using namespace sparsetile;

namespace {

/// A compile-time value.
struct Value {
  enum Kind { Int, Float, Bool, Type } kind = Int;
  int64_t i = 0;
  double f = 0;
  DType dtype = DType::I32;
};

/// Evaluates default expressions against the constants bound so far and the
/// file's `const NAME = value;` declarations.
class Evaluator {
public:
  explicit Evaluator(const ast::Module &module) {
    for (const ast::ConstDecl &c : module.constants)
      fileConstants[c.name] = c.value.get();
  }

  std::map<std::string, std::optional<Value>> bound;

  std::optional<Value> eval(const ast::Expr *e, int depth = 0) {
    if (!e || depth > 64)
      return std::nullopt;
    switch (e->kind) {
    case ast::Expr::IntLit:
      return Value{Value::Int, e->intValue};
    case ast::Expr::FloatLit:
      return Value{Value::Float, 0, e->floatValue};
    case ast::Expr::BoolLit:
      return Value{Value::Bool, e->intValue != 0};
    case ast::Expr::DTypeRef:
      return Value{Value::Type, 0, 0, e->dtype};
    case ast::Expr::Name:
      return name(e->name, depth);
    case ast::Expr::Unary:
      return unary(e->op, eval(e->operands[0].get(), depth + 1));
    case ast::Expr::Binary:
      return binary(e->op, eval(e->operands[0].get(), depth + 1),
                    eval(e->operands[1].get(), depth + 1));
    case ast::Expr::Call:
      return call(*e, depth);
    default:
      return std::nullopt;
    }
  }

private:
  std::map<std::string, const ast::Expr *> fileConstants;

  std::optional<Value> name(const std::string &n, int depth) {
    auto b = bound.find(n);
    if (b != bound.end())
      return b->second;
    auto f = fileConstants.find(n);
    if (f != fileConstants.end())
      return eval(f->second, depth + 1);
    if (n == "inf")
      return Value{Value::Float, 0, INFINITY};
    if (n == "nan")
      return Value{Value::Float, 0, NAN};
    return std::nullopt;
  }

  static std::optional<Value> unary(const std::string &op,
                                    std::optional<Value> a) {
    if (!a)
      return a;
    if (op == "-" && a->kind == Value::Int)
      return Value{Value::Int, int64_t(0 - uint64_t(a->i))};
    if (op == "-" && a->kind == Value::Float)
      return Value{Value::Float, 0, -a->f};
    if (op == "!" && a->kind == Value::Bool)
      return Value{Value::Bool, !a->i};
    if (op == "~" && a->kind == Value::Int)
      return Value{Value::Int, ~a->i};
    return std::nullopt;
  }

  static std::optional<Value> binary(const std::string &op,
                                     std::optional<Value> a,
                                     std::optional<Value> b) {
    if (!a || !b)
      return std::nullopt;
    auto boolean = [](bool v) { return Value{Value::Bool, v}; };
    if (a->kind == Value::Bool && b->kind == Value::Bool) {
      if (op == "&&")
        return boolean(a->i && b->i);
      if (op == "||")
        return boolean(a->i || b->i);
      if (op == "==")
        return boolean(a->i == b->i);
      if (op == "!=")
        return boolean(a->i != b->i);
      return std::nullopt;
    }
    if (a->kind == Value::Int && b->kind == Value::Int) {
      int64_t x = a->i, y = b->i;
      uint64_t ux = uint64_t(x), uy = uint64_t(y);
      if (op == "+")
        return Value{Value::Int, int64_t(ux + uy)};
      if (op == "-")
        return Value{Value::Int, int64_t(ux - uy)};
      if (op == "*")
        return Value{Value::Int, int64_t(ux * uy)};
      if ((op == "/" || op == "%") && (y == 0 || (x == INT64_MIN && y == -1)))
        return std::nullopt;
      if (op == "/") // Truncating, as arith.divsi.
        return Value{Value::Int, x / y};
      if (op == "%")
        return Value{Value::Int, x % y};
      if ((op == "<<" || op == ">>") && (y < 0 || y > 63))
        return std::nullopt;
      if (op == "<<")
        return Value{Value::Int, int64_t(ux << y)};
      if (op == ">>")
        return Value{Value::Int, x >> y};
      if (op == "&")
        return Value{Value::Int, x & y};
      if (op == "|")
        return Value{Value::Int, x | y};
      if (op == "^")
        return Value{Value::Int, x ^ y};
    }
    bool numeric = a->kind != Value::Bool && a->kind != Value::Type &&
                   b->kind != Value::Bool && b->kind != Value::Type;
    if (!numeric)
      return std::nullopt;
    bool ints = a->kind == Value::Int && b->kind == Value::Int;
    double x = a->kind == Value::Int ? double(a->i) : a->f;
    double y = b->kind == Value::Int ? double(b->i) : b->f;
    if (op == "==")
      return boolean(ints ? a->i == b->i : x == y);
    if (op == "!=")
      return boolean(ints ? a->i != b->i : x != y);
    if (op == "<")
      return boolean(ints ? a->i < b->i : x < y);
    if (op == "<=")
      return boolean(ints ? a->i <= b->i : x <= y);
    if (op == ">")
      return boolean(ints ? a->i > b->i : x > y);
    if (op == ">=")
      return boolean(ints ? a->i >= b->i : x >= y);
    if (ints)
      return std::nullopt;
    if (op == "+")
      return Value{Value::Float, 0, x + y};
    if (op == "-")
      return Value{Value::Float, 0, x - y};
    if (op == "*")
      return Value{Value::Float, 0, x * y};
    if (op == "/")
      return Value{Value::Float, 0, x / y};
    return std::nullopt;
  }

  std::optional<Value> call(const ast::Expr &e, int depth) {
    if (e.operands.size() != 2 || !e.kwargs.empty())
      return std::nullopt;
    std::optional<Value> a = eval(e.operands[0].get(), depth + 1);
    std::optional<Value> b = eval(e.operands[1].get(), depth + 1);
    if (!a || !b || a->kind != Value::Int || b->kind != Value::Int)
      return std::nullopt;
    if (e.name == "min")
      return Value{Value::Int, std::min(a->i, b->i)};
    if (e.name == "max")
      return Value{Value::Int, std::max(a->i, b->i)};
    if (e.name == "cdiv" && b->i > 0 && a->i >= 0)
      return Value{Value::Int, (a->i + b->i - 1) / b->i};
    return std::nullopt;
  }
};

int bitsOf(DType t) {
  switch (t) {
  case DType::I8:
  case DType::U8:
    return 8;
  case DType::I16:
  case DType::U16:
    return 16;
  case DType::I32:
  case DType::U32:
    return 32;
  default:
    return 64;
  }
}

/// `v` as a constant of type `t` (wrapped, rounded), or nullopt when MLIRGen
/// would not take it as one.
std::optional<Value> convert(const Value &v, DType t) {
  if (t == DType::I1) {
    if (v.kind == Value::Bool)
      return v;
    return std::nullopt;
  }
  if (t == DType::F32) {
    if (v.kind == Value::Float)
      return Value{Value::Float, 0, double(float(v.f))};
    if (v.kind == Value::Int)
      return Value{Value::Float, 0, double(float(v.i))};
    return std::nullopt;
  }
  if (!dtypeIsInteger(t) || v.kind != Value::Int)
    return std::nullopt;
  int bits = bitsOf(t);
  if (bits == 64)
    return v;
  uint64_t mask = (uint64_t(1) << bits) - 1, u = uint64_t(v.i) & mask;
  if (!dtypeIsUnsigned(t) && (u >> (bits - 1)))
    u |= ~mask; // Sign-extend.
  return Value{Value::Int, int64_t(u)};
}

/// A given value's text as a constant of type `t` (stc -D's rules).
std::optional<Value> parseGiven(const std::string &text, DType t) {
  if (text.empty())
    return std::nullopt;
  if (t == DType::I1) {
    if (text == "true" || text == "1")
      return Value{Value::Bool, 1};
    if (text == "false" || text == "0")
      return Value{Value::Bool, 0};
    return std::nullopt;
  }
  char *end = nullptr;
  errno = 0;
  if (t == DType::F32) {
    double f = std::strtod(text.c_str(), &end);
    if (*end || errno)
      return std::nullopt;
    return convert(Value{Value::Float, 0, f}, t);
  }
  if (dtypeIsUnsigned(t)) {
    if (text[0] == '-')
      return std::nullopt;
    uint64_t u = std::strtoull(text.c_str(), &end, 0);
    if (*end || errno)
      return std::nullopt;
    return convert(Value{Value::Int, int64_t(u)}, t);
  }
  int64_t i = std::strtoll(text.c_str(), &end, 0);
  if (*end || errno)
    return std::nullopt;
  return convert(Value{Value::Int, i}, t);
}

std::string text(const Value &v, DType t) {
  char buf[64];
  switch (v.kind) {
  case Value::Bool:
    return v.i ? "true" : "false";
  case Value::Type:
    return dtypeName(v.dtype);
  case Value::Float:
    if (std::isnan(v.f))
      return "nan";
    if (std::isinf(v.f))
      return v.f > 0 ? "inf" : "-inf";
    snprintf(buf, sizeof buf, "%.9g", v.f);
    return buf;
  case Value::Int:
    if (dtypeIsUnsigned(t))
      snprintf(buf, sizeof buf, "%" PRIu64, uint64_t(v.i));
    else
      snprintf(buf, sizeof buf, "%" PRId64, v.i);
    return buf;
  }
  return "";
}

} // namespace

bool sparsetile::kernelConstants(
    const std::string &source, const std::string &filename,
    const std::string &kernelName,
    const std::map<std::string, std::string> &given,
    std::vector<ConstantValue> &constants, std::string &diagnostics) {
  Diagnostics diags(filename, source);
  ast::Module module;
  // As compile() does: a syntax error elsewhere in the file (another
  // kernel, an fn this kernel does not call) does not stop this kernel.
  if (!parseModule(source, diags, module)) {
    diagnostics = syntaxErrorsFor(module, kernelName);
    if (!diagnostics.empty())
      return false;
  }
  const ast::Kernel *kernel = nullptr;
  for (const ast::Kernel &k : module.kernels)
    if (k.name == kernelName ||
        (kernelName.empty() && module.kernels.size() == 1))
      kernel = &k;
  if (!kernel) {
    diagnostics = filename + " has no kernel '" + kernelName + "'";
    return false;
  }
  Evaluator evaluator(module);
  for (const ast::Param &p : kernel->params) {
    if (!p.isConst)
      continue;
    ConstantValue c;
    c.name = p.name;
    c.dtype = p.dtype;
    c.isType = p.isTypeParam;
    std::optional<Value> v;
    auto over = given.find(p.name);
    if (p.isTypeParam) {
      DType dt;
      if (over != given.end()) {
        if (parseDType(over->second, dt))
          v = Value{Value::Type, 0, 0, dt};
      } else {
        v = evaluator.eval(p.defaultValue.get());
        if (v && v->kind != Value::Type)
          v.reset();
      }
      if (v)
        c.dtype = v->dtype;
    } else if (over != given.end()) {
      v = parseGiven(over->second, p.dtype);
    } else if (p.defaultValue) {
      v = evaluator.eval(p.defaultValue.get());
      if (v)
        v = convert(*v, p.dtype);
    }
    c.known = v.has_value();
    if (v)
      c.value = text(*v, p.dtype);
    evaluator.bound[p.name] = v;
    constants.push_back(std::move(c));
  }
  return true;
}
