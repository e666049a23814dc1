// Helpers of the SPMD pass's tests (hlo_spmd_test.cc, hlo_spmd_calls_test.cc): partition a module's
// text, find an instruction, and simulate one partition's program on cores of a v3-8.
#pragma once
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/step/spmd_step.h"
#include "compiler/hlo/hlo_import.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_spmd.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"

namespace tpusim::hlo::spmd_test {

inline HwConfig v3_8() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml"); }

inline SpmdResult partition(const std::string& text, int64_t copies = 1, SpmdMode mode = SpmdMode::kAuto,
                            const std::string& file = "t.hlo") {
  return spmd_partition(parse_hlo_module(text, file), {mode, copies});
}

inline const Instruction& inst(const Computation& c, const std::string& name) {
  const Instruction* i = c.find(name);
  if (!i) throw std::runtime_error("no instruction " + name + " in " + c.name);
  return *i;
}
inline const Instruction& entry_inst(const Module& m, const std::string& name) { return inst(m.entry_computation(), name); }

// One partition's device time: the module (partitioned or as written) on `cores` cores of a v3-8;
// `exact`: the import lists nothing as approximate.
inline double device_time(const Module& m, int64_t cores, bool exact = true) {
  const HwConfig hw = v3_8();
  ImportOptions io;
  io.replicas = cores;
  const HloImport imp = import_hlo(m, io);
  EXPECT_TRUE(!exact || imp.stats.unmodelled.empty()) << imp.stats.unmodelled.front().instruction << ": "
                                            << imp.stats.unmodelled.front().reason;
  std::vector<compiler::CoreId> ring = compiler::ring_order(hw);
  ring.resize(size_t(cores));
  const compiler::CompiledStep sp = compiler::compile_spmd_graph(imp.graph, hw, "spmd", ring);
  return make_engine("analytical", hw)->run(sp.program, nullptr).device_time_s;
}

inline int64_t inserted(const SpmdReport& r) {
  int64_t n = 0;
  for (const auto& [op, c] : r.collectives) n += c.count;
  return n;
}

}  // namespace tpusim::hlo::spmd_test
