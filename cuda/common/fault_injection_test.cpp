#include "cuda/common/fault_injection.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace cky::cuda {
namespace {

TEST(FaultInjectorTest, EmptySpecificationInjectsNothing) {
  FaultInjector f;
  std::string error;
  ASSERT_TRUE(FaultInjector::Parse("", &f, &error)) << error;
  EXPECT_TRUE(f.empty());
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(f.FailAllocation());
    EXPECT_FALSE(f.FailLaunch({1, 2, 3}));
  }
}

TEST(FaultInjectorTest, CountsBatchesFromOne) {
  FaultInjector f;
  std::string error;
  ASSERT_TRUE(FaultInjector::Parse("malloc:2,launch:1,launch:3", &f, &error)) << error;
  EXPECT_FALSE(f.empty());
  EXPECT_FALSE(f.FailAllocation());  // batch 1
  EXPECT_TRUE(f.FailLaunch({4}));    // launch 1
  EXPECT_TRUE(f.FailAllocation());   // batch 2: no launch follows
  EXPECT_FALSE(f.FailAllocation());  // batch 3
  EXPECT_FALSE(f.FailLaunch({4}));   // launch 2
  EXPECT_FALSE(f.FailAllocation());
  EXPECT_TRUE(f.FailLaunch({4}));  // launch 3
  EXPECT_FALSE(f.FailLaunch({4}));
}

TEST(FaultInjectorTest, LengthFailsEveryBatchHoldingTheLength) {
  FaultInjector f;
  std::string error;
  ASSERT_TRUE(FaultInjector::Parse("length:7", &f, &error)) << error;
  EXPECT_TRUE(f.FailLaunch({3, 7, 9}));
  EXPECT_FALSE(f.FailLaunch({3, 9}));
  EXPECT_TRUE(f.FailLaunch({7}));
  EXPECT_FALSE(f.FailAllocation());
}

TEST(FaultInjectorTest, RejectsMalformedSpecifications) {
  for (const char* bad :
       {"malloc", "malloc:", "malloc:0", "malloc:-1", "malloc:x", "oom:1", "malloc:1,", ",launch:1",
        "launch:1:2", "length:99999999999", "launch:2000000000"}) {
    FaultInjector f;
    std::string error;
    EXPECT_FALSE(FaultInjector::Parse(bad, &f, &error)) << bad;
    EXPECT_NE(error.find("CKY_FAULT_INJECT"), std::string::npos) << bad << ": " << error;
  }
}

TEST(FaultInjectorTest, ReadsTheEnvironment) {
  ASSERT_EQ(setenv(FaultInjector::kEnvironmentVariable, "launch:2", 1), 0);
  FaultInjector f;
  std::string error;
  ASSERT_TRUE(FaultInjector::FromEnvironment(&f, &error)) << error;
  EXPECT_FALSE(f.FailLaunch({1}));
  EXPECT_TRUE(f.FailLaunch({1}));
  ASSERT_EQ(unsetenv(FaultInjector::kEnvironmentVariable), 0);
  ASSERT_TRUE(FaultInjector::FromEnvironment(&f, &error)) << error;
  EXPECT_TRUE(f.empty());
}

}  // namespace
}  // namespace cky::cuda
