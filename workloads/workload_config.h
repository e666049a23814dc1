// Workload configs (YAML `kind:` selects the schema). Issue 2: `kind: kernel`.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/hw_loader.h"

namespace tpusim {

// kind: kernel — run one kernel once on one core.
struct KernelWorkload {
  std::string kernel;                      // matmul | layernorm | softmax | attention | encoder_block
  std::map<std::string, uint64_t> shape;   // keys per kernel, see models/kernel_specs.h
  std::string dtype = "f32";               // tensor dtype in HBM: f32 | bf16
  std::string precision = "default";       // fp32 matmul passes: default (1) | high (3) | highest (6)
  uint32_t chip = 0;                       // which chip and core run it
  uint32_t core = 0;
};

struct WorkloadConfig {
  std::string kind;  // "kernel"
  std::string name;  // file stem or `name:` key
  KernelWorkload kernel;
};

WorkloadConfig load_workload_config(const std::string& path, const std::vector<Override>& overrides = {});
WorkloadConfig load_workload_config_text(const std::string& yaml, const std::string& origin,
                                         const std::vector<Override>& overrides = {});
std::string dump_workload_config(const WorkloadConfig& w);
std::string workload_schema_markdown();

// Splits command-line overrides between the hardware and the workload config. A path may be
// prefixed `hw.` or `workload.`; an unprefixed path goes to whichever schema has its first key
// (ConfigError if neither, with "did you mean").
struct SplitOverrides {
  std::vector<Override> hw, workload;
};
SplitOverrides split_overrides(const std::vector<Override>& all);

}  // namespace tpusim
