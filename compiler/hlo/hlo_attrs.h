// Typed readers of instruction attributes (the importer's view of `dimensions={0,1}`, `window={...}`,
// `replica_groups=[2,4]<=[8]`, ...). Each returns nothing when the attribute is absent and throws
// HloError at the value's line and column when it is malformed. Values are checked for form only:
// whether dimension numbers fit the operands' ranks is the importer's concern.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/hlo_ast.h"

namespace tpusim::hlo {

// {0,1} or {} (dimensions=, lhs_contracting_dims=, ...).
std::optional<std::vector<int64_t>> int_list_attr(const Module& m, const Instruction& in, std::string_view name);
// An integer (index=0, iota_dimension=1, channel_id=3).
std::optional<int64_t> int_attr(const Module& m, const Instruction& in, std::string_view name);
// A quoted string, unescaped (custom_call_target="..."), or a bare word (kind=kLoop, direction=LT).
std::optional<std::string> string_attr(const Module& m, const Instruction& in, std::string_view name);

struct SliceDim {
  int64_t start = 0, limit = 0, stride = 1;
};
// slice={[0:2:1], [1:3]}
std::optional<std::vector<SliceDim>> slice_attr(const Module& m, const Instruction& in);

struct PadDim {
  int64_t low = 0, high = 0, interior = 0;
};
// padding=0_0x1_1 (low_high[_interior] per dimension, 'x'-separated; negative values allowed).
std::optional<std::vector<PadDim>> padding_attr(const Module& m, const Instruction& in);

struct WindowDim {
  int64_t size = 1, stride = 1, pad_low = 0, pad_high = 0, lhs_dilate = 1, rhs_dilate = 1;
  bool reversal = false;
};
// window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x1}
std::optional<std::vector<WindowDim>> window_attr(const Module& m, const Instruction& in);

// dim_labels=b01f_01io->b01f: the three label strings (b/f, i/o and digits).
struct DimLabels {
  std::string lhs, rhs, out;
};
std::optional<DimLabels> dim_labels_attr(const Module& m, const Instruction& in);

// A dot's dimension numbers (each list empty when its attribute is absent).
struct DotDims {
  std::vector<int64_t> lhs_batch, lhs_contracting, rhs_batch, rhs_contracting;
};
DotDims dot_dims(const Module& m, const Instruction& in);

// replica_groups={{0,1},{2,3}}, {} (all devices, one group) or the iota form [G,S]<=[dims]T(perm),
// expanded to the groups.
std::optional<std::vector<std::vector<int64_t>>> replica_groups_attr(const Module& m, const Instruction& in);
// source_target_pairs={{0,1},{1,2}}
std::optional<std::vector<std::pair<int64_t, int64_t>>> source_target_pairs_attr(const Module& m, const Instruction& in);

// direction=EQ|NE|LT|LE|GT|GE (compare).
std::optional<std::string> direction_attr(const Module& m, const Instruction& in);

// sharding={replicated}, {maximal device=N}, {manual}, {devices=[2,1]0,1 [last_tile_dim_replicate]},
// {devices=[2,1]<=[2]}, a tuple {{...}, {...}}; anything else is kept as kOther.
struct Sharding {
  enum class Kind { kReplicated, kMaximal, kManual, kTiled, kTuple, kOther } kind = Kind::kOther;
  std::string raw;                   // as written, without the outer braces
  int64_t device = -1;               // kMaximal
  std::vector<int64_t> tile_dims;    // kTiled: devices=[...]
  std::vector<int64_t> devices;      // kTiled: the device list, iota forms expanded
  bool last_tile_dim_replicate = false;
  std::vector<Sharding> elements;    // kTuple
};
std::optional<Sharding> sharding_attr(const Module& m, const Instruction& in);

// metadata={op_type="..." op_name="..." source_file="..." source_line=N}: every key, values unescaped.
std::optional<std::map<std::string, std::string>> metadata_attr(const Module& m, const Instruction& in);

}  // namespace tpusim::hlo
