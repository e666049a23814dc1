// Small builder for test Programs: append instructions to one core's stream and get their index.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "sim/isa/program.h"

namespace tpusim::test {

class Stream {
 public:
  explicit Stream(isa::CoreProgram& p) : p_(p) {}

  uint32_t dma_load(uint64_t bytes, std::initializer_list<uint32_t> deps = {}, std::string label = "load") {
    isa::Instr i;
    i.op = isa::Op::kDmaLoad;
    i.bytes = bytes;
    return add(i, deps, label);
  }
  uint32_t dma_store(uint64_t bytes, std::initializer_list<uint32_t> deps = {}, std::string label = "store") {
    isa::Instr i;
    i.op = isa::Op::kDmaStore;
    i.bytes = bytes;
    return add(i, deps, label);
  }
  uint32_t weights(uint32_t mxu, uint32_t k, uint32_t n, std::initializer_list<uint32_t> deps = {},
                   std::string label = "weights") {
    isa::Instr i;
    i.op = isa::Op::kMxuWeights;
    i.mxu = mxu;
    i.k = k;
    i.n = n;
    return add(i, deps, label);
  }
  uint32_t matmul(uint32_t mxu, uint32_t rows, uint32_t k, uint32_t n, std::initializer_list<uint32_t> deps = {},
                  uint32_t passes = 1, std::string label = "matmul") {
    isa::Instr i;
    i.op = isa::Op::kMxuMatmul;
    i.mxu = mxu;
    i.rows = rows;
    i.k = k;
    i.n = n;
    i.passes = passes;
    return add(i, deps, label);
  }
  uint32_t vpu(isa::VpuWork w, std::initializer_list<uint32_t> deps = {}, std::string label = "vpu") {
    isa::Instr i;
    i.op = isa::Op::kVpu;
    i.vpu = w;
    return add(i, deps, label);
  }
  uint32_t barrier(uint32_t id, std::initializer_list<uint32_t> deps = {}, std::string label = "barrier") {
    isa::Instr i;
    i.op = isa::Op::kBarrier;
    i.barrier_id = id;
    return add(i, deps, label);
  }
  // Transfers (program.h): a send to / recv from core `core` of chip `chip`, paired by `tag`.
  uint32_t send(uint64_t bytes, uint32_t chip, uint32_t core, uint32_t tag, std::initializer_list<uint32_t> deps = {},
                std::string label = "send") {
    isa::Instr i;
    i.op = isa::Op::kSend;
    i.bytes = bytes;
    i.peer_chip = chip;
    i.peer_core = core;
    i.tag = tag;
    return add(i, deps, label);
  }
  uint32_t recv(uint32_t chip, uint32_t core, uint32_t tag, std::initializer_list<uint32_t> deps = {},
                std::string label = "recv", uint64_t bytes = 0) {
    isa::Instr i;
    i.op = isa::Op::kRecv;
    i.bytes = bytes;
    i.peer_chip = chip;
    i.peer_core = core;
    i.tag = tag;
    return add(i, deps, label);
  }
  uint32_t host_load(uint64_t bytes, std::initializer_list<uint32_t> deps = {}, std::string label = "host_load") {
    isa::Instr i;
    i.op = isa::Op::kHostLoad;
    i.bytes = bytes;
    return add(i, deps, label);
  }
  uint32_t host_store(uint64_t bytes, std::initializer_list<uint32_t> deps = {}, std::string label = "host_store") {
    isa::Instr i;
    i.op = isa::Op::kHostStore;
    i.bytes = bytes;
    return add(i, deps, label);
  }
  // A data-center-network store (isa::Instr::dcn: on to the next slice's host).
  uint32_t dcn_store(uint64_t bytes, std::initializer_list<uint32_t> deps = {}, std::string label = "dcn send") {
    isa::Instr i;
    i.op = isa::Op::kHostStore;
    i.bytes = bytes;
    i.dcn = true;
    return add(i, deps, label);
  }
  // Same, with deps from a vector (programs built in loops).
  uint32_t with_deps(uint32_t instr, const std::vector<uint32_t>& deps) {
    for (uint32_t d : deps) add_dep(instr, d);
    return instr;
  }
  void alloc(uint64_t offset, uint64_t size, uint32_t first, uint32_t last, std::string label) {
    p_.vmem_allocs.push_back({offset, size, first, last, std::move(label)});
  }
  // Adds a dependency to an existing instruction (for deps on later-built indices).
  void add_dep(uint32_t instr, uint32_t dep) { p_.instrs[instr].deps.push_back(dep); }
  // Moves an instruction to the core's background queue (program.h: `async`), e.g.
  // s.async(s.dma_load(bytes, {recv})); returns it.
  uint32_t async(uint32_t instr) {
    p_.instrs[instr].async = true;
    return instr;
  }
  uint32_t size() const { return uint32_t(p_.instrs.size()); }

 private:
  uint32_t add(isa::Instr i, std::initializer_list<uint32_t> deps, std::string label) {
    i.deps.assign(deps.begin(), deps.end());
    i.label = std::move(label);
    p_.instrs.push_back(std::move(i));
    return uint32_t(p_.instrs.size() - 1);
  }
  isa::CoreProgram& p_;
};

// A program with one stream per listed (chip, core).
inline isa::Program make_program(std::string name, std::initializer_list<std::pair<uint32_t, uint32_t>> cores = {{0, 0}}) {
  isa::Program p;
  p.name = std::move(name);
  for (auto [chip, core] : cores) {
    isa::CoreProgram cp;
    cp.chip = chip;
    cp.core = core;
    p.cores.push_back(std::move(cp));
  }
  return p;
}

// Collects trace events (copies the strings).
struct RecordedEvent {
  std::string process, track, name;
  uint64_t start = 0, dur = 0, bytes = 0;
};

}  // namespace tpusim::test

#include "sim/base/trace.h"

namespace tpusim::test {

class RecordingTrace : public TraceSink {
 public:
  void complete(const TraceEvent& e) override {
    events.push_back({std::string(e.process), std::string(e.track), std::string(e.name), e.start_cycle, e.dur_cycles,
                      e.bytes});
  }
  std::vector<RecordedEvent> on(const std::string& process, const std::string& track) const {
    std::vector<RecordedEvent> out;
    for (const auto& e : events)
      if (e.process == process && e.track == track) out.push_back(e);
    return out;
  }
  std::vector<RecordedEvent> events;
};

// Value of stat `key` of block `block` in a RunResult's stats tree.
template <typename Result>
double stat(const Result& r, const std::string& block, const std::string& key) {
  return r.stats.at(block).at(key).at("value").template get<double>();
}

}  // namespace tpusim::test
