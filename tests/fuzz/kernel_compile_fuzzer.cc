// libFuzzer target of a kernel workload's compile path: the input (a workload YAML document and
// `--set` lines, fuzz_input.h) is loaded as `tpusim run` loads it, on the v3-8 slice (with the
// input's `hw.` overrides), compiled and run on the analytical engine. Shape dimensions above 256
// are clamped to 256 after loading, so that one execution takes milliseconds (the loader's own
// bounds are fuzzed by config_loader_fuzzer). Bad input must be a ConfigError, a program that does
// not fit the hardware a SimError (exit 3); anything else escaping, a crash, a sanitizer report or a
// timeout is a bug.
//
// Built as a libFuzzer binary with -DTPUSIM_FUZZ=ON (preset "fuzz", clang); otherwise linked with
// fuzz_replay.cc and run by ctest over the shipped kernel workloads.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "sim/base/sim_error.h"
#include "tests/fuzz/fuzz_input.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/kernel_run.h"

namespace {

const std::string kHwFile = std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml";
constexpr uint64_t kMaxDim = 256;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  static const HwConfig v3_8 = load_hw_config(kHwFile);
  const fuzz::ConfigInput in = fuzz::split_input(data, size);
  try {
    const SplitOverrides sets = split_overrides(fuzz::parse_overrides(in.set_lines));
    WorkloadConfig w = load_workload_config_text(in.yaml, "fuzz.yaml", sets.workload);
    if (w.kind() != WorkloadKind::kKernel) return 0;
    for (auto& [key, v] : w.kernel().shape)
      v = std::min(v, kMaxDim);
    const HwConfig hw = sets.hw.empty() ? v3_8 : load_hw_config(kHwFile, sets.hw);
    KernelRunOptions opts;
    opts.engine = "analytical";
    (void)run_kernel(hw, w, opts);
  } catch (const ConfigError& e) {
    fuzz::note(e);
  } catch (const SimError& e) {
    fuzz::note(e);
  }
  return 0;
}
