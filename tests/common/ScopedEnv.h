//===- ScopedEnv.h - An environment variable set aside for a test -*- C++ -*-===//
//
// Tests of one code path unset the variable that would choose another
// (SPARSETILE_ASSEMBLER=driver in a run measuring the driver's assembly),
// and put it back after.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TESTS_COMMON_SCOPEDENV_H
#define SPARSETILE_TESTS_COMMON_SCOPEDENV_H

#include <cstdlib>
#include <optional>
#include <string>

namespace sparsetile::test {

class ScopedUnsetEnv {
public:
  explicit ScopedUnsetEnv(const char *name) : name(name) {
    if (const char *v = std::getenv(name))
      saved = v;
    unsetenv(name);
  }
  ~ScopedUnsetEnv() {
    if (saved)
      setenv(name, saved->c_str(), 1);
  }
  ScopedUnsetEnv(const ScopedUnsetEnv &) = delete;
  ScopedUnsetEnv &operator=(const ScopedUnsetEnv &) = delete;

private:
  const char *name;
  std::optional<std::string> saved;
};

} // namespace sparsetile::test

#endif // SPARSETILE_TESTS_COMMON_SCOPEDENV_H
