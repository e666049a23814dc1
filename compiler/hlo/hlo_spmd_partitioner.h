// The SPMD pass's rewriter (internal to compiler/hlo; hlo_spmd.h is the interface): the new ENTRY
// built instruction by instruction, with the collectives and slices that reshard a value from one
// tiling to another (hlo_spmd.cc) and the per-op rules (hlo_spmd_ops.cc).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/hlo/hlo_spmd.h"
#include "compiler/hlo/hlo_spmd_tiling.h"

namespace tpusim::hlo::spmd {

// A value of the partitioned ENTRY: its instruction there (-1: an element of a tuple reached through
// get-tuple-element) and the tiling of each array leaf.
struct Val {
  int index = -1;
  bool tuple = false;
  Tiling t;
  std::vector<Val> elems;
  // A broadcast or iota read once, not emitted yet: built at the tiling its user asks for (XLA's
  // propagation gives it its user's sharding), so that no slice of a whole broadcast is needed.
  int deferred = -1;  // its original instruction
};

class Partitioner {
 public:
  Partitioner(const Module& m, const SpmdOptions& o, SpmdReport& report);
  Module run();

 private:
  // hlo_spmd_ops.cc: the rule of each op; returns the value of `in` in the new ENTRY.
  Val partition(const Instruction& in, const std::vector<Tiling>* given);
  Val source(const Instruction& in, const std::vector<Tiling>* given);
  Val elementwise(const Instruction& in, const std::vector<Tiling>* given);
  Val broadcast(const Instruction& in, const std::vector<Tiling>* given);
  Val transpose(const Instruction& in, const std::vector<Tiling>* given);
  Val reshape(const Instruction& in, const std::vector<Tiling>* given);
  Val dot(const Instruction& in, const std::vector<Tiling>* given);
  Val reduce(const Instruction& in, const std::vector<Tiling>* given);
  std::optional<Tiling> broadcast_tiling(const Instruction& in) const;
  Val dimensionwise(const Instruction& in, const std::vector<Tiling>* given);
  Val custom_call(const Instruction& in, const std::vector<Tiling>* given);
  Val as_written(const Instruction& in);
  Val whole(const Instruction& in, const std::vector<Tiling>* given);
  Val tuple(const Instruction& in, const std::vector<Tiling>* given);

  // hlo_spmd.cc: the given sharding of `in` as the tilings of its array leaves (nullptr: none given).
  std::optional<std::vector<Tiling>> given_of(const Instruction& in);
  // A copy of `in` with `operands` (new indices), `shape` and `attrs`, appended to the new ENTRY.
  int emit_self(const Instruction& in, const std::vector<int>& operands, const Shape& shape);
  int emit(const std::string& opcode, const std::string& suffix, const Shape& shape, const std::vector<int>& operands,
           std::vector<Attribute> attrs = {}, std::vector<int> called = {});
  Attribute attr(const std::string& name, const std::string& value) const;
  // The array value `x` (global shape `global`) resharded from `from` to `to`: gathers, all-to-all,
  // local slices, a collective-permute when only the devices' order differs. Returns its new index.
  int reshard(int x, const Tiling& from, const Tiling& to, const Shape& global);
  // The same for a value (a deferred one is built at `to`), and a value as it is.
  int reshard(const Val& v, const Tiling& to, const Shape& global);
  int use(const Val& v);
  static size_t leaf_count(const Val& v);
  // All-reduce of partial sums along `axes` of `t` (reduction computation `to_apply`, an encoded index).
  int all_reduce(int x, const Tiling& t, const std::vector<int>& axes, int to_apply, const std::string& suffix);
  std::string groups_text(const std::vector<std::vector<int64_t>>& groups) const;
  void count(const std::string& opcode, const Shape& shape);
  // A scalar add computation of type `type` for partial sums (encoded: -(k + 1) for helper k).
  int add_computation(ElementType type);
  void note(const Instruction& in, std::string reason);
  // `v` (computed with its own tilings) resharded to the given ones, when given and different.
  Val finish(Val v, const Instruction& in, const std::vector<Tiling>* given);
  Val leaf(int index, Tiling t) const { return Val{index, false, std::move(t), {}}; }
  Val tree(const Shape& s, const std::vector<Tiling>& leaves, size_t& k, int index) const;
  Shape local(const Shape& s, const Val& v) const;
  const Val& operand(const Instruction& in, size_t i) const { return vals_.at(size_t(in.operands.at(i))); }
  const Shape& operand_global(const Instruction& in, size_t i) const;
  std::string expand_groups(const Instruction& in) const;

  const Module& m_;
  const Computation& c_;
  SpmdReport& report_;
  int64_t n_;       // partitions
  int64_t copies_;  // data-parallel copies: device d of copy k is core k x n + d
  std::vector<Instruction> out_;
  std::set<std::string> names_;
  std::vector<Computation> helpers_;
  std::map<ElementType, int> add_;
  std::vector<Val> vals_;  // per original ENTRY instruction
  std::vector<int> users_;  // per original ENTRY instruction: how many instructions read it
  const Instruction* cur_ = nullptr;
};

}  // namespace tpusim::hlo::spmd
