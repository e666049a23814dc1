#include "compiler/replicas.h"

#include <stdexcept>

namespace tpusim::compiler {

ReplicaStreams::ReplicaStreams(isa::Program& prog, const std::vector<CoreId>& cores, uint64_t vmem_bytes)
    : prog_(prog), vmem_bytes_(vmem_bytes) {
  if (cores.empty()) throw std::invalid_argument("ReplicaStreams: no cores");
  prog_.cores.assign(cores.size(), {});
  for (size_t i = 0; i < cores.size(); ++i) {
    prog_.cores[i].chip = cores[i].chip;
    prog_.cores[i].core = cores[i].core;
  }
  recorded_.resize(cores.size());
  main_ = std::make_unique<ProgramBuilder>(prog_.cores[0], vmem_bytes_);
}

ReplicaStreams::~ReplicaStreams() = default;

std::vector<ProgramBuilder*> ReplicaStreams::begin_section() {
  if (in_section_) throw std::logic_error("ReplicaStreams: sections do not nest");
  in_section_ = true;
  Section s;
  s.from = prog_.cores[0].instrs.size();
  s.alloc_from = prog_.cores[0].vmem_allocs.size();
  sections_.push_back(s);
  open_.clear();
  std::vector<ProgramBuilder*> b = {main_.get()};
  for (size_t c = 1; c < prog_.cores.size(); ++c) {
    recorded_[c].emplace_back();
    open_.push_back(std::make_unique<ProgramBuilder>(recorded_[c].back(), vmem_bytes_, uint32_t(s.from)));
    b.push_back(open_.back().get());
  }
  return b;
}

void ReplicaStreams::end_section() {
  if (!in_section_) throw std::logic_error("ReplicaStreams: end_section without begin_section");
  in_section_ = false;
  Section& s = sections_.back();
  s.len = prog_.cores[0].instrs.size() - s.from;
  s.alloc_len = prog_.cores[0].vmem_allocs.size() - s.alloc_from;
  open_.clear();
}

// Core c's stream is core 0's with each section's span replaced by core c's recording, likewise
// for the VMEM allocations. Each replica is allocated once at its final size: copying the streams
// is most of a data-parallel compile.
void ReplicaStreams::finish() {
  if (in_section_) throw std::logic_error("ReplicaStreams: finish inside a section");
  const isa::CoreProgram& src = prog_.cores[0];
  for (size_t c = 1; c < prog_.cores.size(); ++c) {
    auto& instrs = prog_.cores[c].instrs;
    auto& allocs = prog_.cores[c].vmem_allocs;
    reserve_instrs(instrs, src.instrs.size());
    allocs.reserve(src.vmem_allocs.size());
    size_t at = 0, alloc_at = 0;
    for (size_t k = 0; k < sections_.size(); ++k) {
      const Section& s = sections_[k];
      const isa::CoreProgram& sec = recorded_[c][k];
      if (sec.instrs.size() != s.len || sec.vmem_allocs.size() != s.alloc_len)
        throw std::logic_error("ReplicaStreams: replica streams diverged in a collective section");
      instrs.insert(instrs.end(), src.instrs.begin() + long(at), src.instrs.begin() + long(s.from));
      instrs.insert(instrs.end(), sec.instrs.begin(), sec.instrs.end());
      at = s.from + s.len;
      allocs.insert(allocs.end(), src.vmem_allocs.begin() + long(alloc_at), src.vmem_allocs.begin() + long(s.alloc_from));
      allocs.insert(allocs.end(), sec.vmem_allocs.begin(), sec.vmem_allocs.end());
      alloc_at = s.alloc_from + s.alloc_len;
    }
    instrs.insert(instrs.end(), src.instrs.begin() + long(at), src.instrs.end());
    allocs.insert(allocs.end(), src.vmem_allocs.begin() + long(alloc_at), src.vmem_allocs.end());
    recorded_[c].clear();
  }
}

}  // namespace tpusim::compiler
