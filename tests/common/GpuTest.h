//===- GpuTest.h - GoogleTest fixtures of the GPU tests ---------*- C++ -*-===//
//
// Fixtures that skip their test, with the reason, on a machine without a
// GPU: what every TEST_P (GpuParamTest) and TEST_F (GpuTest) of the GPU
// tests starts from.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TESTS_COMMON_GPUTEST_H
#define SPARSETILE_TESTS_COMMON_GPUTEST_H

#include "sparsetile/runtime/Driver.h"

#include <gtest/gtest.h>

#include <string>

namespace sparsetile::testing {

template <typename Base> class GpuFixture : public Base {
protected:
  void SetUp() override {
    std::string why;
    if (!sparsetile::rt::gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
};

template <typename Param>
using GpuParamTest = GpuFixture<::testing::TestWithParam<Param>>;
using GpuTest = GpuFixture<::testing::Test>;

} // namespace sparsetile::testing

#endif // SPARSETILE_TESTS_COMMON_GPUTEST_H
