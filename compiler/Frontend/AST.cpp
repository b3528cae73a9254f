//===- AST.cpp - Printing the tile DSL syntax tree ------------------------===//
//
// Implements ast::print, the `stc --emit=ast` output: an indented outline with
// one node per line, two spaces per level. The format is meant for humans and
// for tests, so it shows every field that distinguishes two trees (names,
// operators, literal values, dtypes, keyword names) and prints floats so that
// they round-trip and always look like floats.
//
//===----------------------------------------------------------------------===//

#include "AST.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace sparsetile::ast {

namespace {


/// Shortest %g form that reads back as the same double, with ".0" appended
/// when it would otherwise look like an integer.
std::string formatFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buf[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  std::string text = buf;
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

class Printer {
public:
  std::string out;

  void line(int indent, const std::string &text) {
    out.append(size_t(indent) * 2, ' ');
    out += text;
    out += '\n';
  }

  void printKernel(const Kernel &kernel) {
    std::string head = "kernel " + kernel.name;
    for (const Attribute &attr : kernel.attrs)
      head += " @" + attr.name + "(" +
              (attr.constName.empty() ? std::to_string(attr.value)
                                      : attr.constName) +
              ")";
    line(0, head);
    if (kernel.autotune)
      printAutotune(*kernel.autotune);
    for (const Param &param : kernel.params)
      printParam(param);
    printBlock(kernel.body, 1);
  }

  void printDecls(const Module &module) {
    for (const Import &imp : module.imports)
      line(0, "import \"" + imp.path + "\"");
    for (const ConstDecl &c : module.constants) {
      line(0, "const " + c.name);
      printExpr(*c.value, 1);
    }
    for (const Function &fn : module.functions) {
      std::string head = "fn " + fn.name;
      if (fn.hasReturnType)
        head += " -> " + typeText(fn.returnType);
      line(0, head);
      for (size_t i = 0; i < fn.params.size(); ++i) {
        if (fn.paramTyped[i])
          printParam(fn.params[i]);
        else
          line(1, "param " + fn.params[i].name);
      }
      printBlock(fn.body, 1);
    }
  }

  static std::string typeText(const Param &param) {
    std::string text = param.isPointer ? "*" : "";
    if (param.isDesc)
      text += "desc<";
    text += param.isTypeParam       ? std::string("dtype")
            : !param.typeRef.empty() ? param.typeRef
                                     : std::string(dtypeName(param.dtype));
    if (param.isDesc)
      text += ">";
    return text;
  }

  void printAutotune(const AutotuneAttr &t) {
    std::string key;
    for (const auto &k : t.key)
      key += (key.empty() ? "" : ", ") + k.first;
    line(1, "autotune key=[" + key + "]");
    for (const auto &config : t.configs) {
      std::string text;
      for (const TuneSetting &s : config)
        text += (text.empty() ? "" : ", ") + s.name + ": " +
                std::to_string(s.value);
      line(2, "config {" + text + "}");
    }
    for (const ExprPtr &g : t.grid) {
      line(2, "grid");
      printExpr(*g, 3);
    }
  }

  void printParam(const Param &param) {
    std::string text = "param ";
    if (param.isConst)
      text += "const ";
    text += param.name + ": " + typeText(param);
    const Expr *def = param.defaultValue.get();
    if (def && isLeaf(*def)) {
      // The common case (`= 1024`) reads best on one line.
      line(1, text + " = " + leafText(*def));
      return;
    }
    if (def) {
      line(1, text + " =");
      printExpr(*def, 2);
      return;
    }
    line(1, text);
  }

  void printBlock(const Block &block, int indent) {
    for (const StmtPtr &stmt : block)
      printStmt(*stmt, indent);
  }

  void printStmt(const Stmt &stmt, int indent) {
    switch (stmt.kind) {
    case Stmt::Let:
      line(indent, "let " + targets(stmt));
      printExpr(*stmt.value, indent + 1);
      return;
    case Stmt::Assign:
      line(indent, "assign " + targets(stmt) + " " + stmt.op + "=");
      printExpr(*stmt.value, indent + 1);
      return;
    case Stmt::For:
    case Stmt::StaticFor:
      line(indent, (stmt.kind == Stmt::StaticFor ? "static_for " : "for ") +
                       stmt.name);
      line(indent + 1, "lo");
      printExpr(*stmt.lo, indent + 2);
      line(indent + 1, "hi");
      printExpr(*stmt.hi, indent + 2);
      if (stmt.step) {
        line(indent + 1, "step");
        printExpr(*stmt.step, indent + 2);
      }
      if (stmt.numStages)
        line(indent + 1, "num_stages " + std::to_string(stmt.numStages));
      if (stmt.warpSpecialize >= 0)
        line(indent + 1,
             "warp_specialize " + std::to_string(stmt.warpSpecialize));
      line(indent + 1, "body");
      printBlock(stmt.body, indent + 2);
      return;
    case Stmt::If:
      line(indent, "if");
      printExpr(*stmt.value, indent + 1);
      line(indent + 1, "then");
      printBlock(stmt.body, indent + 2);
      if (stmt.hasElse) {
        line(indent + 1, "else");
        printBlock(stmt.elseBody, indent + 2);
      }
      return;
    case Stmt::While:
      line(indent, "while");
      printExpr(*stmt.value, indent + 1);
      line(indent + 1, "body");
      printBlock(stmt.body, indent + 2);
      return;
    case Stmt::Break:
      line(indent, "break");
      return;
    case Stmt::Continue:
      line(indent, "continue");
      return;
    case Stmt::ExprStmt:
      line(indent, "expr");
      printExpr(*stmt.value, indent + 1);
      return;
    case Stmt::Return:
      line(indent, "return");
      if (stmt.value)
        printExpr(*stmt.value, indent + 1);
      return;
    case Stmt::Const:
      line(indent, "const " + stmt.name);
      printExpr(*stmt.value, indent + 1);
      return;
    case Stmt::StaticAssert:
      line(indent, "static_assert \"" + stmt.op + "\"");
      printExpr(*stmt.value, indent + 1);
      return;
    }
  }

  /// `x`, or `(a, b)` for an unpacking.
  static std::string targets(const Stmt &stmt) {
    if (stmt.names.empty())
      return stmt.name;
    std::string text = "(";
    for (size_t i = 0; i < stmt.names.size(); ++i)
      text += (i ? ", " : "") + stmt.names[i];
    return text + ")";
  }

  static bool isLeaf(const Expr &e) {
    return e.kind == Expr::IntLit || e.kind == Expr::FloatLit ||
           e.kind == Expr::BoolLit || e.kind == Expr::Name ||
           e.kind == Expr::DTypeRef;
  }

  static std::string leafText(const Expr &e) {
    switch (e.kind) {
    case Expr::IntLit:
      return std::to_string(e.intValue);
    case Expr::FloatLit:
      return formatFloat(e.floatValue);
    case Expr::BoolLit:
      return e.intValue ? "true" : "false";
    case Expr::Name:
      return e.name;
    case Expr::DTypeRef:
      return dtypeName(e.dtype);
    default:
      return "";
    }
  }

  void printExpr(const Expr &e, int indent) {
    switch (e.kind) {
    case Expr::IntLit:
      line(indent, "int " + leafText(e));
      return;
    case Expr::FloatLit:
      line(indent, "float " + leafText(e));
      return;
    case Expr::BoolLit:
      line(indent, "bool " + leafText(e));
      return;
    case Expr::Name:
      line(indent, "name " + e.name);
      return;
    case Expr::DTypeRef:
      line(indent, "dtype " + leafText(e));
      return;
    case Expr::Unary:
      line(indent, "unary " + e.op);
      break;
    case Expr::Binary:
      line(indent, "binary " + e.op);
      break;
    case Expr::Call:
      line(indent, (e.isMethod ? "method " : "call ") + e.name);
      break;
    case Expr::Index: {
      std::string text = "index [";
      for (size_t i = 0; i < e.index.size(); ++i) {
        if (i)
          text += ", ";
        text += e.index[i] == IndexEntry::Keep      ? ":"
                : e.index[i] == IndexEntry::NewAxis ? "None"
                                                    : "#";
      }
      line(indent, text + "]");
      break;
    }
    case Expr::List:
      line(indent, "list");
      break;
    case Expr::Tuple:
      line(indent, "tuple");
      break;
    case Expr::String:
      line(indent, "string \"" + e.name + "\"");
      return;
    }
    for (const ExprPtr &operand : e.operands)
      printExpr(*operand, indent + 1);
    for (const KwArg &kw : e.kwargs) {
      line(indent + 1, "kwarg " + kw.name);
      printExpr(*kw.value, indent + 2);
    }
  }
};

} // namespace

std::string print(const Module &module) {
  Printer printer;
  for (const Kernel &kernel : module.kernels)
    printer.printKernel(kernel);
  return printer.out;
}

std::string printDecls(const Module &module) {
  Printer printer;
  printer.printDecls(module);
  return printer.out;
}

std::string print(const Kernel &kernel) {
  Printer printer;
  printer.printKernel(kernel);
  return printer.out;
}

static void forEachExpr(const Expr &e,
                        const std::function<void(const Expr &)> &f) {
  f(e);
  for (const ExprPtr &o : e.operands)
    forEachExpr(*o, f);
  for (const KwArg &k : e.kwargs)
    forEachExpr(*k.value, f);
}

void forEachExpr(const Block &block,
                 const std::function<void(const Expr &)> &f) {
  for (const StmtPtr &s : block) {
    for (const Expr *e : {s->value.get(), s->lo.get(), s->hi.get(),
                          s->step.get()})
      if (e)
        forEachExpr(*e, f);
    forEachExpr(s->body, f);
    forEachExpr(s->elseBody, f);
  }
}

} // namespace sparsetile::ast
