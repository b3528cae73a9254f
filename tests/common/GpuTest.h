//===- GpuTest.h - GoogleTest fixtures of the GPU tests ---------*- C++ -*-===//
//
// A parameterized fixture that skips its test, with the reason, on a machine
// without a GPU: what every TEST_P of the GPU tests starts from.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TESTS_COMMON_GPUTEST_H
#define SPARSETILE_TESTS_COMMON_GPUTEST_H

#include "sparsetile/runtime/Driver.h"

#include <gtest/gtest.h>

#include <string>

namespace sparsetile::testing {

template <typename Param>
class GpuParamTest : public ::testing::TestWithParam<Param> {
protected:
  void SetUp() override {
    std::string why;
    if (!sparsetile::rt::gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
};

} // namespace sparsetile::testing

#endif // SPARSETILE_TESTS_COMMON_GPUTEST_H
