// libFuzzer target of the config loaders: one input (a YAML document and `--set` lines,
// fuzz_input.h) is loaded as a hardware config, as a workload config (both with the overrides, split
// between them as `tpusim run` splits them) and as a sweep file, and each loaded config is dumped
// back to YAML. Bad input must be a ConfigError; anything else escaping (another exception, a crash,
// a sanitizer report, a timeout, memory past -rss_limit_mb) is a bug.
//
// Built as a libFuzzer binary with -DTPUSIM_FUZZ=ON (preset "fuzz", clang); otherwise linked with
// fuzz_replay.cc and run by ctest over the seed corpus (the shipped configs).
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "sweep/sweep_config.h"
#include "tests/fuzz/fuzz_input.h"
#include "workloads/config/workload_config.h"

namespace {

// `include:` paths of a hardware document resolve against the shipped hardware folder, so that the
// seeds (configs/hw/*.yaml, which include chips/*.yaml) load as they do from the command line.
const std::string kHwDir = std::string(TPUSIM_SOURCE_DIR) + "/configs/hw";

template <class F>
void expect_config_error_only(F&& f) {
  try {
    f();
  } catch (const tpusim::ConfigError& e) {
    tpusim::fuzz::note(e);  // bad input, reported: what the target allows
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  const fuzz::ConfigInput in = fuzz::split_input(data, size);
  SplitOverrides sets;
  try {
    sets = split_overrides(fuzz::parse_overrides(in.set_lines));
  } catch (const ConfigError& e) {
    fuzz::note(e);
    return 0;
  }
  expect_config_error_only([&] {
    const HwConfig hw = load_hw_config_text(in.yaml, "fuzz.yaml", kHwDir, sets.hw);
    (void)dump_hw_config(hw);
  });
  expect_config_error_only([&] {
    const WorkloadConfig w = load_workload_config_text(in.yaml, "fuzz.yaml", sets.workload);
    (void)dump_workload_config(w);
  });
  expect_config_error_only([&] { (void)sweep::load_sweep_config_text(in.yaml, "fuzz.yaml"); });
  return 0;
}
