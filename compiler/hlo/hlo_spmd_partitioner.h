// The SPMD pass's rewriter (internal to compiler/hlo; hlo_spmd.h is the interface): the new ENTRY
// built instruction by instruction, with the collectives and slices that reshard a value from one
// tiling to another (hlo_spmd.cc), the per-op rules (hlo_spmd_ops.cc), and the computations that
// while, call and conditional run, partitioned for their operands' tilings (hlo_spmd_calls.cc).
#pragma once
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/hlo/hlo_spmd.h"
#include "compiler/hlo/hlo_spmd_tiling.h"

namespace tpusim::hlo::spmd {

// A value of the computation being partitioned: its instruction there (-1: an element of a tuple reached through
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

// Index of a rewritten computation in `called` while the pass runs: helpers are -(k + 1), the module's
// own computations their index, the partitioned versions of called computations kPartBase + j.
constexpr int kPartBase = 1 << 29;

// A computation's partitioned version: its encoded index and its root's value (tilings).
struct Called {
  int index = -1;
  Val root;
};

// Whether `v` has the tuple structure of `s`, each leaf's tiling of its array's rank.
bool fits(const Val& v, const Shape& s);

class Partitioner {
 public:
  Partitioner(const Module& m, const SpmdOptions& o, SpmdReport& report);
  Module run();

 private:
  // hlo_spmd_ops.cc: the rule of each op; returns the value of `in` in the new computation.
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

  // hlo_spmd_calls.cc: while, call and conditional partition the computations they run.
  Val while_loop(const Instruction& in, const std::vector<Tiling>* given);
  Val call(const Instruction& in, const std::vector<Tiling>* given);
  Val conditional(const Instruction& in, const std::vector<Tiling>* given);
  // Computation `comp` partitioned with its parameters' values `params` (tilings), its root resharded
  // to `root_to` when given. Memoized by computation and tilings; a dry run (to learn what the body
  // makes of the loop state) leaves no trace in the module or the report.
  Called computation(int comp, const std::vector<Val>& params, const Val* root_to, bool dry);
  // What a dry run restores: the report, and the helpers and versions made since.
  struct Snapshot {
    SpmdReport report;
    size_t helpers = 0, parts = 0;
  };
  Snapshot snapshot() const { return {report_, helpers_.size(), parts_.size()}; }
  void restore(Snapshot s);
  // Whether a called computation can be partitioned here (call depth and work bounded); notes why not.
  bool may_descend(const Instruction& in);
  // `v` (global shape `global`) with every array leaf resharded to `to`'s: a tuple rebuilt from its
  // elements (the operands of the tuple instruction that made it, so that a loop's counter stays the
  // constant the importer reads the trip count from). Returns its new index.
  int reshard_tree(const Val& v, const Val& to, const Shape& global);
  // The instructions of the current computation with each inserted all-reduce whose only user is a
  // local slice of one dimension by the all-reduce's group replaced by one reduce-scatter (XLA's
  // ReduceScatterCreator: half the bytes moved); the slices removed. Returns the root's new index.
  int fold_reduce_scatters(int root);
  // The current computation's new instructions as a computation, `root` its root.
  Computation close(int root);
  // The module with the partitioned ENTRY `entry` and the partitioned called computations.
  Module assemble(Computation entry);

  // The state of the computation being partitioned (saved while a called one is).
  struct Frame {
    const Computation* c = nullptr;
    std::vector<Instruction> out;
    std::set<std::string> names;
    std::vector<Val> vals;
    std::vector<int> users;
    const Instruction* cur = nullptr;
    const std::vector<Val>* params = nullptr;
    std::map<int, std::pair<Tiling, std::vector<int>>> all_reduces;  // inserted: tiling and partial axes
    std::map<int, std::pair<Tiling, bool>> slices;  // local slices: the target tiling, counted in local_slices
  };
  void swap_frame(Frame& f);
  void run_instructions();

  // hlo_spmd.cc: the given sharding of `in` as the tilings of its array leaves (nullptr: none given).
  std::optional<std::vector<Tiling>> given_of(const Instruction& in);
  // A copy of `in` with `operands` (new indices), `shape` and `attrs`, appended to the new computation.
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
  const Computation* c_;
  SpmdReport& report_;
  int64_t n_;       // partitions
  int64_t copies_;  // data-parallel copies: device d of copy k is core k x n + d
  std::vector<Instruction> out_;
  std::set<std::string> names_;
  std::vector<Computation> helpers_;
  std::map<ElementType, int> add_;
  // The computation being partitioned (c_, from out_ to slices_; the caller's saved in a Frame).
  std::vector<Val> vals_;   // per original instruction
  std::vector<int> users_;  // per original instruction: how many instructions read it
  const Instruction* cur_ = nullptr;
  const std::vector<Val>* params_ = nullptr;  // a called computation's parameters (nullptr: ENTRY's, as given)
  std::map<int, std::pair<Tiling, std::vector<int>>> all_reduces_;  // Frame::all_reduces
  std::map<int, std::pair<Tiling, bool>> slices_;                    // Frame::slices
  std::vector<Computation> parts_;  // partitioned called computations (encoded kPartBase + j)
  std::vector<int> part_of_;        // the module computation each is a version of
  std::map<std::string, Called> memo_;
  int depth_ = 0;          // called computations being partitioned
  int64_t processed_ = 0;  // instructions partitioned (every version and dry run)
};

}  // namespace tpusim::hlo::spmd
