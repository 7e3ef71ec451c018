// cupti_launch_log: a CUDA injection library that writes every kernel launch of a process, in
// order, one line each: "INDEX NAME" (INDEX from 0, NAME the mangled kernel name). For finding
// which launch of a test a compute-sanitizer --launch-skip must name (scripts/gpu-sanitize's
// 800-word jobs); racecheck_probe shows how the tool counts.
//
//   g++ -shared -fPIC -O2 -I$CUDA/include scripts/cupti_launch_log.cpp -L$CUDA/lib -lcupti \
//     -o cupti_launch_log.so
//   CUDA_INJECTION64_PATH=$PWD/cupti_launch_log.so CUPTI_LAUNCH_LOG=launches.txt ./some_test
//
// It counts launches at the driver API (cuLaunchKernel and its siblings), where the runtime's
// launches, <<<...>>> included, all end up.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::FILE* log_file = nullptr;
long launches = 0;
std::mutex log_mutex;

bool IsLaunch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}

void CUPTIAPI OnDriverCall(void*, CUpti_CallbackDomain, CUpti_CallbackId id, const void* data) {
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (call->callbackSite != CUPTI_API_ENTER || !IsLaunch(id)) return;
  std::lock_guard<std::mutex> lock(log_mutex);
  std::fprintf(log_file, "%ld %s\n", launches++, call->symbolName ? call->symbolName : "?");
}

void CloseLog() {
  std::lock_guard<std::mutex> lock(log_mutex);
  if (log_file != nullptr) std::fclose(log_file);
  log_file = nullptr;
}

}  // namespace

extern "C" int InitializeInjection() {
  const char* path = std::getenv("CUPTI_LAUNCH_LOG");
  log_file = std::fopen(path != nullptr ? path : "launches.txt", "w");
  if (log_file == nullptr) return 0;
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, OnDriverCall, nullptr) != CUPTI_SUCCESS ||
      cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
    return 0;
  }
  std::atexit(CloseLog);
  return 1;
}
