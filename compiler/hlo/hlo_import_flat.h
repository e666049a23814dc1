// torch_xla FSDP's flat-parameter collectives in HLO (XlaFullyShardedDataParallel with
// flatten_parameters), found so that the importer reads each as one flat collective
// (models::CollectiveAttrs::flat), as tpusim's compiler runs it: the unit's tensors laid end to end
// in the collective's buffer, cut from it and flattened into it without a pass of their own.
// The forms (tpusim export-hlo writes them, hlo_export.cc):
//   gather:  all-gather(-start/-done) of a 1-D shard along dimension 0 -> slices [a:b] of the buffer,
//            contiguous from 0 in instruction order -> each, when its one user is a reshape, that reshape
//   scatter: reshape of each tensor to 1-D -> concatenate along 0 -> pad with a constant at the end
//            (optional) -> reduce-scatter along 0, or async-start of a computation holding just that
//            reduce-scatter, then async-done
// Every instruction between the collective and the tensors must have that one user. Internal to
// the importer (hlo_import.cc); docs/hlo.md ("Collectives") describes it for users.
#pragma once
#include <map>
#include <vector>

#include "compiler/hlo/hlo_ast.h"
#include "models/graph.h"

namespace tpusim::hlo {

struct FlatGather {
  int buffer = -1;           // the instruction whose value is the gathered buffer (all-gather or -done)
  std::vector<int> cuts;     // its slices, in buffer order
  std::vector<models::Dims> dims;  // per cut: the tensor's dimensions (its reshape's, else the slice's)
};

struct FlatScatter {
  int done = -1;             // async-done of an async-start; -1 for a reduce-scatter
  std::vector<int> tensors;  // the flattened tensors (the reshapes' operands), in buffer order
};

// What the importer makes of an instruction of a flat pattern.
enum class FlatRole {
  kGather,       // the all-gather(-start): the parts, one per cut
  kCut,          // a slice: its part (of the value of the gather's buffer instruction)
  kCutReshape,   // a cut's reshape: the part itself (its operand's value)
  kScatter,      // the reduce-scatter or async-start: one flat reduce-scatter of the tensors
  kScatterView,  // a scatter's reshape, concatenate, pad or padding constant: no value of its own
  kScatterDone,  // an async scatter's async-done: where it is awaited
};

struct FlatUse {
  FlatRole role = FlatRole::kScatterView;
  int pattern = -1;  // kCut: the gather (its key in `gathers`)
  int part = -1;     // kCut: the part
};

struct FlatPatterns {
  std::map<int, FlatGather> gathers;    // by the all-gather or all-gather-start
  std::map<int, FlatScatter> scatters;  // by the reduce-scatter or async-start
  std::map<int, FlatUse> uses;          // every instruction of a pattern but a gather's -done

};

// The flat patterns of computation `c` of `m`.
FlatPatterns find_flat_patterns(const Module& m, const Computation& c);

}  // namespace tpusim::hlo
