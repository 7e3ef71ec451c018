#include "common/timeline.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <thread>

namespace cky::timeline {
namespace {

TEST(TimelineTest, RecordsPhasesFromThreadsAndNotes) {
  { Scope before("not recorded: off"); }
  EXPECT_EQ(Report(), "");
  Enable();
  ASSERT_TRUE(Enabled());
  {
    Scope outer("outer");
    std::thread worker([] {
      Scope inner("inner");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
    worker.join();
  }
  { Scope again("inner"); }
  Note("device", "binary 1.0 ms");
  Note("device", "binary 2.0 ms");
  const std::string report = Report();
  EXPECT_EQ(report.find("not recorded"), std::string::npos);
  const size_t outer = report.find("outer"), inner = report.find("inner");
  ASSERT_NE(outer, std::string::npos);
  ASSERT_NE(inner, std::string::npos);
  EXPECT_LT(outer, inner) << "phases in order of first start:\n" << report;
  long calls = 0;
  ASSERT_EQ(std::sscanf(report.c_str() + inner + 5, "%ld", &calls), 1);
  EXPECT_EQ(calls, 2) << report;
  EXPECT_NE(report.find("device: binary 2.0 ms"), std::string::npos) << report;
  EXPECT_EQ(report.find("binary 1.0 ms"), std::string::npos) << report;
}

}  // namespace
}  // namespace cky::timeline
