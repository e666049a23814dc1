// Element-wise and reduction kernels.
//
// The kernel's iteration space is its root's shape (for a reduction: the reduced operand's). Inputs
// as large as the iteration space are streamed in T tiles through two VMEM buffers each (the DMA of
// tile t+1 overlaps the vector work on tile t); small inputs (broadcast vectors, scalars) are loaded
// once. Vector work per tile is the kernel's total work / T.
#include <algorithm>
#include <map>

#include "compiler/lower/lowering.h"
#include "compiler/lower/vector_cost.h"
#include "compiler/plan/layout.h"

namespace tpusim::compiler {

using models::OpKind;

namespace {
// Largest streamed tile per buffer: big enough to amortize DMA setup, small enough for two
// buffers of every operand to fit VMEM with room to spare.
constexpr uint64_t kTargetTileBytes = 512 * 1024;
}  // namespace

void lower_vector_kernel(LowerContext& cx, const Fusion& f) {
  const auto& g = cx.graph;
  const auto& root = g.node(f.root);
  const bool is_reduce = f.kind == FusionKind::kReduce;
  const models::Dims iter = is_reduce ? g.node(root.inputs[0]).shape : root.shape;
  const int64_t iter_elems = models::num_elements(iter);
  auto& pb = cx.pb;
  pb.begin_kernel(f.name);

  std::vector<int> streamed, small;
  uint64_t streamed_bytes = 0, largest = 0, small_bytes = 0;
  isa::VpuWork work;
  // A gather reads only the rows it picks (dynamic-offset DMAs), not its whole table.
  std::map<int, int> gather_of;  // an input table -> the gather reading it
  for (int x : f.nodes)
    if (g.node(x).kind == OpKind::kGather) gather_of[g.node(x).inputs[0]] = x;
  auto read_as = [&](int in) -> const models::Node& {
    auto it = gather_of.find(in);
    return it == gather_of.end() ? g.node(in) : g.node(it->second);
  };
  auto input_bytes = [&](int in) { return stored_bytes(g, read_as(in).id); };
  for (int in : f.inputs) {
    const auto& n = read_as(in);
    uint64_t b = input_bytes(in);
    if (models::num_elements(n.shape) * 8 <= iter_elems) {
      small.push_back(in);
      small_bytes += b;
    } else {
      streamed.push_back(in);
      streamed_bytes += b;
      largest = std::max(largest, b);
    }
    work.vld_vregs += vregs(n.shape, n.dtype);
  }
  for (int x : f.nodes) work += node_work(g, g.node(x), cx.hw.chip.core.vpu);
  uint64_t reduce_out_bytes = 0;
  for (int r : f.merged_reduces) {
    work += node_work(g, g.node(r), cx.hw.chip.core.vpu);
    reduce_out_bytes += stored_bytes(g, r);
  }
  const uint64_t out_bytes = stored_bytes(g, f.root);
  work.vst_vregs += vregs(root.shape, root.dtype);
  if (!is_reduce) largest = std::max(largest, out_bytes);
  // Extra outputs (an already-fused group's) are written tile by tile beside the root.
  uint64_t extra_bytes = 0;
  for (int x : f.extra_outputs) {
    extra_bytes += stored_bytes(g, x);
    largest = std::max(largest, stored_bytes(g, x));
    work.vst_vregs += vregs(g.node(x).shape, g.node(x).dtype);
  }
  // Small inputs are loaded whole; when they would not fit beside the streamed buffers (a
  // scatter-add of a large batch's updates into a vocabulary-sized table: an embedding gradient at
  // long sequences) they are streamed with the rest, as tiles.
  if (!small.empty()) {
    const uint64_t t = std::max<uint64_t>(1, (largest + kTargetTileBytes - 1) / kTargetTileBytes);
    const uint64_t need = 2 * (streamed_bytes / t + 1) + 2 * (is_reduce ? out_bytes : out_bytes / t + 1) + small_bytes;
    if (need > pb.vmem_available()) {
      for (int in : small) {
        streamed.push_back(in);
        streamed_bytes += input_bytes(in);
        largest = std::max(largest, input_bytes(in));
      }
      small.clear();
      small_bytes = 0;
    }
  }

  const uint64_t tiles = std::max<uint64_t>(1, (largest + kTargetTileBytes - 1) / kTargetTileBytes);
  // Two buffers per streamed input and for the output tile, plus the small inputs; alloc()
  // reports an overflow with the buffer's name.
  const uint64_t per_tile_out = (is_reduce ? out_bytes : out_bytes / tiles + 1) + (extra_bytes ? extra_bytes / tiles + 1 : 0);
  pb.alloc(2 * (streamed_bytes / tiles + 1), "in_buffers");
  pb.alloc(2 * per_tile_out, "out_buffers");
  if (small_bytes) pb.alloc(small_bytes, "small_inputs");

  isa::Deps small_loads;
  for (int in : small) {
    small_loads.push_back(pb.dma_load(input_bytes(in), {}, g.node(in).name, cx.mem_of(in)));
    cx.moved(in, input_bytes(in));
  }

  const isa::VpuWork tile_work = scale_work(work, 1.0 / double(tiles));
  std::vector<isa::Deps> loads(tiles);
  std::vector<uint32_t> compute(tiles), store(tiles);
  auto emit_loads = [&](uint64_t t) {
    isa::Deps war;
    if (t >= 2) war.push_back(compute[t - 2]);  // the buffer this tile reuses is free
    for (int in : streamed) {
      uint64_t b = input_bytes(in) / tiles;
      loads[t].push_back(pb.dma_load(b, war, g.node(in).name, cx.mem_of(in)));
      cx.moved(in, b);
    }
  };
  if (!streamed.empty()) emit_loads(0);
  for (uint64_t t = 0; t < tiles; ++t) {
    if (t + 1 < tiles && !streamed.empty()) emit_loads(t + 1);
    isa::Deps deps = loads[t];
    deps.insert(deps.end(), small_loads.begin(), small_loads.end());
    if (t >= 1) deps.push_back(compute[t - 1]);             // accumulators / in-order results
    if ((!is_reduce || !f.extra_outputs.empty()) && t >= 2) deps.push_back(store[t - 2]);  // output buffer reuse
    compute[t] = pb.vpu(tile_work, deps, "compute");
    if (!is_reduce) {
      store[t] = pb.dma_store(out_bytes / tiles, {compute[t]}, root.name, cx.mem_of(f.root));
      cx.moved(f.root, out_bytes / tiles);
    }
    for (int x : f.extra_outputs) {
      const uint32_t st = pb.dma_store(stored_bytes(g, x) / tiles, {compute[t]}, g.node(x).name, cx.mem_of(x));
      cx.moved(x, stored_bytes(g, x) / tiles);
      if (is_reduce) store[t] = st;
    }
  }
  if (is_reduce) {
    pb.dma_store(out_bytes, {compute[tiles - 1]}, root.name, cx.mem_of(f.root));
    cx.moved(f.root, out_bytes);
  }
  if (reduce_out_bytes) {
    const int side = reductions_side(cx, f);
    pb.dma_store(reduce_out_bytes, {compute[tiles - 1]}, kReductionsLabel, cx.mem_of(side));
    cx.moved(side, reduce_out_bytes);
  }
  pb.end_kernel();
}

}  // namespace tpusim::compiler
