// Progress of a long run on stderr: items done, their rate, and (when the input's size is known)
// how much of the input is done and the time left. Redrawn on one line at least once a second
// by a thread of its own, so that it moves even while a long batch is being parsed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace cky::apps {

// Whether to show progress: --progress forces it, --no-progress forbids it, and by default it
// is shown only when stderr is a terminal.
bool ShowProgress(bool force_on, bool force_off);

class ProgressMeter {
 public:
  // `what` names the items ("sentences"); `input_size` is the input's size in bytes, -1 when
  // unknown. Nothing is drawn when `enabled` is false.
  ProgressMeter(std::string what, int64_t input_size, bool enabled);
  // Draws the final state and ends the line.
  ~ProgressMeter();

  // `done` items finished, after `bytes` of input.
  void Update(int64_t done, int64_t bytes);

  // The line drawn: "1,234 sentences, 56.7 sentences/s, 42% of the input, 0:01:23 left".
  static std::string Describe(const std::string& what, int64_t done, int64_t bytes,
                              int64_t input_size, double seconds);

 private:
  void Draw();
  void Loop();

  std::string what_;
  int64_t input_size_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<int64_t> done_{0};
  std::atomic<int64_t> bytes_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cky::apps
