// The dot tiling's cost model and search.
//
// A dot runs as weight-stationary matmuls: one operand (the "stationary" one, C columns) is cut
// into k x n <= 128 x 128 weight tiles pushed into an MXU; the other (the "streamed" one, R rows)
// streams its rows through. Either operand can be the stationary one; the choice and the tile
// sizes come from the analytical cost model below, under the VMEM budget:
//   * the output is cut into tr x tc tiles accumulated in fp32 in VMEM over K blocks of tk;
//   * a streamed panel (tr x K) or the whole stationary operand (K x C) stays resident in VMEM when
//     it fits, otherwise blocks are re-read from HBM for every tile that needs them;
//   * loads are double buffered: the DMA of step t+1 overlaps the MXU work of step t;
//   * fp32 operands are converted to bf16 on the VPU as they arrive (1 bf16 pass at default
//     precision, hi/lo splits for high/highest), together with any fused operand producers;
//   * each MXU keeps two weight tiles (weight_buffers): the next tile loads while one streams.
#include "compiler/lower/dot_tiling.h"

#include <algorithm>
#include <cmath>

#include "compiler/lower/vector_cost.h"
#include "compiler/plan/layout.h"
#include "sim/hw/resolved_hw.h"
#include "sim/mxu/mxu_timing.h"
#include "sim/vpu/vpu_timing.h"

namespace tpusim::compiler {

namespace {

// A candidate tiling and its estimate (VMEM bytes as the cost model computes them).
struct Candidate {
  bool stream_lhs = true;
  int64_t tr = 0, tc = 0, tk = 0;
  bool s_res = false, w_res = false;
  uint32_t acc_tiles = 2;
  double s_buf = 0, w_buf = 0, fixed_buf = 0;
  double est = std::numeric_limits<double>::infinity();
  uint64_t steps = 0;
};

// Tile sizes to try for an extent `full`: all of it (rounded up to `quantum`) when at most `cap`,
// and the powers of two from 4096 down that are smaller.
std::vector<int64_t> candidates(int64_t full, int64_t quantum, int64_t cap) {
  std::vector<int64_t> c;
  const int64_t whole = round_up(full, quantum);
  if (whole <= cap) c.push_back(whole);
  for (int64_t x : {4096, 2048, 1024, 512, 256, 128})
    if (x < whole && x >= quantum) c.push_back(x);
  if (c.empty()) c.push_back(std::min(whole, quantum));
  return c;
}

// The search over orientations and tile sizes. Small inputs that no tiling fits beside are given
// up one by one (moved to their operand's large inputs), so the operand bytes are kept here.
class TilingSearch {
 public:
  TilingSearch(const DotProblem& p, const HwConfig& hw, const ResolvedHw& r, uint64_t vmem_bytes)
      : p_(p), chip_(hw.chip), core_(hw.chip.core), vmem_(vmem_bytes), bpc_(r.hbm_core_bytes_per_cycle),
        dma_fixed_(r.dma_fixed_cycles), wl_(mxu_weight_load_cycles(hw.chip.core.mxu, hw.chip.core.mxu.rows)) {
    for (int o = 0; o < 2; ++o) {
      large_bytes_[o] = p.operands[o].large_bytes;
      for (size_t i = 0; i < p.operands[o].small_bytes.size(); ++i) {
        small_[o].push_back({i, p.operands[o].small_bytes[i]});
        small_bytes_[o] += p.operands[o].small_bytes[i];
      }
    }
  }

  DotTiling run() {
    search_all();
    while (!std::isfinite(best_.est) && stream_largest_small()) search_all();
    return result();
  }

 private:
  int64_t rows_of(bool stream_lhs) const { return stream_lhs ? p_.m : p_.n; }
  int64_t cols_of(bool stream_lhs) const { return stream_lhs ? p_.n : p_.m; }

  // MXU cycles of one step (a tr x tk block against a tk x tc block, the arrays sharing its tiles).
  double step_mxu_cycles(int64_t tr, int64_t tc, int64_t tk, int64_t R, int64_t C) const {
    const int64_t rows = core_.mxu.rows, cols = core_.mxu.cols;
    return double(mxu_stream_cycles(core_.mxu, uint32_t(std::min(tr, R)), p_.passes, p_.packing)) *
           double(div_up(std::min(tk, p_.k), rows) * div_up(std::min(tc, C), cols)) / core_.mxu.count;
  }

  Candidate evaluate(bool stream_lhs, int64_t tr, int64_t tc, int64_t tk, bool partial) const;
  bool fit_buffers(Candidate& t, int64_t R, int64_t C, double s_bpe, double w_bpe, double fixed) const;
  void search(bool small_rows, bool partial);
  void search_all();
  bool stream_largest_small();
  DotTiling result() const;

  const DotProblem& p_;
  const ChipParams& chip_;
  const CoreParams& core_;
  const uint64_t vmem_;
  const double bpc_;   // HBM bytes per core cycle
  const uint64_t dma_fixed_;  // a DMA's fixed cycles
  const uint64_t wl_;  // cycles of a full weight tile's load
  uint64_t large_bytes_[2] = {0, 0}, small_bytes_[2] = {0, 0};
  std::vector<std::pair<size_t, uint64_t>> small_[2];  // small inputs still held whole: index, bytes
  std::vector<size_t> streamed_small_[2];
  Candidate best_;
};

// Analytical cost of one tiling (the compiler's decision model; same formulas as the sim).
// `partial`: a merged reduction's line may straddle tiles; its partial results then stay in VMEM
// (output-sized accumulators, added to tile by tile) until the last tile of the line.
Candidate TilingSearch::evaluate(bool stream_lhs, int64_t tr, int64_t tc, int64_t tk, bool partial) const {
  Candidate t;
  const int64_t B = p_.batch, K = p_.k, R = rows_of(stream_lhs), C = cols_of(stream_lhs);
  const bool spans_r = stream_lhs ? p_.reduce_spans_m : p_.reduce_spans_n;
  const bool spans_c = stream_lhs ? p_.reduce_spans_n : p_.reduce_spans_m;
  const bool straddles = (spans_r && tr < R) || (spans_c && tc < C);
  if (straddles && !partial) return t;  // a reduced line would straddle tiles
  t.stream_lhs = stream_lhs;
  t.tr = tr;
  t.tc = tc;
  t.tk = tk;
  const int s = stream_lhs ? 0 : 1, w = 1 - s;
  const double s_bpe = double(large_bytes_[s]) / double(B * R * K);
  const double w_bpe = double(large_bytes_[w]) / double(B * K * C);
  const int64_t ri = div_up(R, tr), cj = div_up(C, tc), kb = div_up(K, tk);
  const double out_bpe = double(p_.out_bytes) / p_.out_elems;
  // fp32 accumulator tiles: the epilogue runs in place and the store drains a finished tile
  // while the next ones accumulate; enough of them (2 to 4) that the tiles computed meanwhile
  // cover a store's latency and transfer. The epilogue's large inputs are double buffered.
  {
    const double tile_mxu = double(div_up(K, tk)) * step_mxu_cycles(tr, tc, tk, R, C);
    const double store = double(dma_fixed_) + double(tr * tc) * out_bpe / bpc_;
    t.acc_tiles = uint32_t(std::clamp(1.0 + std::ceil(store / std::max(tile_mxu, 1.0)), 2.0, 4.0));
  }
  const double acc = double(t.acc_tiles) * double(tr * tc * 4);
  const double epi_buf = 2.0 * double(tr * tc) * double(p_.epilogue_large_bytes) / double(p_.out_elems);
  const double fixed = acc + epi_buf + double(small_bytes_[s] + small_bytes_[w] + p_.epilogue_small_bytes) +
                       (straddles ? double(p_.reduce_out_bytes) : 0.0);
  if (!fit_buffers(t, R, C, s_bpe, w_bpe, fixed)) return t;  // does not fit
  const double traffic = double(large_bytes_[s]) * (t.s_res ? 1 : cj) + double(large_bytes_[w]) * (t.w_res ? 1 : ri) +
                         double(p_.out_bytes + p_.epilogue_large_bytes + small_bytes_[s] + small_bytes_[w] +
                                p_.epilogue_small_bytes);
  const double hbm = traffic / bpc_;
  double mxu = 0;
  const int64_t sub_k = div_up(K, core_.mxu.rows), sub_c = div_up(C, core_.mxu.cols);
  for (int64_t i = 0; i < ri; ++i) {
    int64_t rows = std::min(tr, R - i * tr);
    mxu += double(sub_k * sub_c) * double(std::max<uint64_t>(mxu_stream_cycles(core_.mxu, uint32_t(rows), p_.passes, p_.packing), wl_));
  }
  mxu = mxu * double(B) / core_.mxu.count;
  isa::VpuWork v = scale_work(p_.operands[s].prep, t.s_res ? 1.0 : double(cj));
  v += scale_work(p_.operands[w].prep, t.w_res ? 1.0 : double(ri));
  v += p_.epilogue;
  const uint64_t acc_vregs = uint64_t(B) * vregs({R, C}, models::DType::kF32);
  v += isa::VpuWork{acc_vregs * uint64_t(kb), 0, 0, acc_vregs * uint64_t(kb - 1), acc_vregs * uint64_t(kb)};
  const double vpu = double(vpu_issue_cycles(core_.vpu, v));
  const double first = (s_bpe * tr * tk + w_bpe * tk * tc) / bpc_;
  const double last = double(tr * tc) * out_bpe / bpc_;
  t.steps = uint64_t(B * ri * cj * kb);
  // Latency chain of double buffering: the load into a buffer waits for the matmuls that read
  // it two steps earlier, so two steps take at least one load (fixed latency + transfer), its
  // VPU preparation and one step's matmuls with their fill/drain.
  const double fd = double(mxu_fill_drain_cycles(core_.mxu));
  const double step_stream = step_mxu_cycles(tr, tc, tk, R, C);
  const double step_load = (s_bpe * tr * tk * (t.s_res ? 0 : 1) + w_bpe * tk * tc * (t.w_res ? 0 : 1)) / bpc_;
  const double pipeline = double(core_.vpu.pipeline_latency_cycles);
  const double chain = (t.s_res && t.w_res)
                           ? 0.0
                           : double(t.steps) * (double(dma_fixed_) + step_load + pipeline + step_stream + fd) / 2.0;
  t.est = std::max({mxu, hbm, vpu, chain}) + first + last + fd + double(t.steps) * pipeline;
  return t;
}

// Operand blocks land as stored (s_bpe / w_bpe bytes per element, double buffered) and are
// converted to the MXU's bf16 (2 bytes); a resident operand keeps only its bf16 copy (the landing
// buffers are reused), two panels of it (the next is prepared while one streams) or one stationary
// operand per batch (two when batches alternate). Residency of both is preferred, then of either.
// Sets the residency and buffers of `t`; false when nothing fits.
bool TilingSearch::fit_buffers(Candidate& t, int64_t R, int64_t C, double s_bpe, double w_bpe, double fixed) const {
  const int64_t B = p_.batch, K = p_.k, tr = t.tr, tc = t.tc, tk = t.tk;
  for (int res = 3; res >= 0; --res) {
    bool s_res = res & 1, w_res = res & 2;
    const double ek = double(std::min(tk, K));  // a block is never deeper than K
    const double s_land = 2.0 * double(std::min(tr, R)) * ek * s_bpe, w_land = 2.0 * ek * double(std::min(tc, C)) * w_bpe;
    double s_buf = s_res ? s_land + 2.0 * tr * K * 2 : s_land + 2.0 * tr * tk * 2;
    double w_buf = w_res ? w_land + (B > 1 ? 2.0 : 1.0) * K * C * 2 : w_land + 2.0 * tk * tc * 2;
    if (s_buf + w_buf + fixed <= double(vmem_)) {
      t.s_res = s_res;
      t.w_res = w_res;
      t.s_buf = s_buf;
      t.w_buf = w_buf;
      t.fixed_buf = fixed;
      return true;
    }
  }
  return false;
}

// Both orientations, every candidate tile size: rows per tile from 8 (or fewer than 128 rows:
// `small_rows`) up, columns and depth in MXU-sized quanta.
void TilingSearch::search(bool small_rows, bool partial) {
  for (bool stream_lhs : {true, false}) {
    const int64_t R = rows_of(stream_lhs), C = cols_of(stream_lhs);
    std::vector<int64_t> rows;
    if (small_rows) {
      for (int64_t x : {64, 32, 16, 8})
        if (x < R) rows.push_back(x);
    } else {
      rows = candidates(R, kSublanes, 2048);
    }
    for (int64_t tr : rows)
      for (int64_t tc : candidates(C, core_.mxu.cols, 4096))
        for (int64_t tk : candidates(p_.k, core_.mxu.rows, 4096)) {
          Candidate t = evaluate(stream_lhs, tr, tc, tk, partial);
          if (t.est < best_.est || (t.est == best_.est && t.steps < best_.steps)) best_ = t;
        }
  }
}

void TilingSearch::search_all() {
  search(false, false);
  // A kernel whose output tile must span a long reduced dimension, with a large epilogue (e.g. a
  // LayerNorm backward fused into its dot at hidden 768 and 2048 rows: five [2048, 768] operands),
  // may fit only with fewer than 128 rows per tile: search those too, rather than fail.
  if (!std::isfinite(best_.est)) search(true, false);
  // Still nothing: the merged reductions' lines cannot be whole in one tile beside the epilogue's
  // buffers (a LayerNorm backward at 2048 rows of a small hidden size); their partial results are
  // accumulated across the tiles instead.
  if (!std::isfinite(best_.est) && p_.merged_reduces) search(false, true);
}

// Still nothing: an input held whole in VMEM (a "small" one: at most 1/8 of its operand's
// elements, such as a broadcast's source) leaves no room for any tiling: the largest such input
// is streamed with the operand's blocks instead, each block reading its share of it, and so on
// until a tiling fits. E.g. a convolution's im2col operand is a broadcast of its input over the
// kernel positions (compiler/hlo/hlo_import_ops.cc): a 32x56x56x64 bf16 input (12.25 MiB) cannot
// stay whole in a core's 16 MiB beside the tiles, and is read block by block as XLA reads the
// input in windows.
bool TilingSearch::stream_largest_small() {
  int from = -1;
  size_t at = 0;
  uint64_t most = 0;
  for (int o = 0; o < 2; ++o)
    for (size_t i = 0; i < small_[o].size(); ++i)
      if (const uint64_t b = small_[o][i].second; b > most) from = o, at = i, most = b;
  if (from < 0) return false;
  streamed_small_[from].push_back(small_[from][at].first);
  small_[from].erase(small_[from].begin() + long(at));
  small_bytes_[from] -= most;
  large_bytes_[from] += most;
  return true;
}

DotTiling TilingSearch::result() const {
  DotTiling t;
  const Candidate& b = best_;
  t.fits = std::isfinite(b.est);
  t.stream_lhs = b.stream_lhs;
  t.batch = p_.batch;
  t.r = rows_of(b.stream_lhs);
  t.c = cols_of(b.stream_lhs);
  t.k = p_.k;
  t.est_cycles = b.est;
  t.streamed_small[0] = streamed_small_[0];
  t.streamed_small[1] = streamed_small_[1];
  t.tr = b.tr;
  t.tc = b.tc;
  t.tk = b.tk;
  if (!t.fits) return t;
  t.row_tiles = div_up(t.r, b.tr);
  t.col_tiles = div_up(t.c, b.tc);
  t.k_blocks = div_up(t.k, b.tk);
  t.streamed_resident = b.s_res;
  t.stationary_resident = b.w_res;
  t.acc_tiles = b.acc_tiles;
  t.streamed_buffer_bytes = uint64_t(b.s_buf);
  t.stationary_buffer_bytes = uint64_t(b.w_buf);
  t.fixed_buffer_bytes = uint64_t(b.fixed_buf);
  t.steps = b.steps;
  // The accumulation of a step's results waits one step, plus as many as the array's fill/drain
  // latency spans (at most 3 more: the MXU result buffers are finite).
  const double step_mxu = std::max(1.0, std::floor(step_mxu_cycles(b.tr, b.tc, b.tk, t.r, t.c)));
  t.accumulate_lag_steps = 1 + size_t(std::min(3.0, std::ceil(double(mxu_fill_drain_cycles(core_.mxu)) / step_mxu)));
  return t;
}

}  // namespace

DotTiling choose_dot_tiling(const DotProblem& p, const HwConfig& hw, uint64_t vmem_bytes) {
  return TilingSearch(p, hw, resolve_hw(hw), vmem_bytes).run();
}

std::vector<DotStep> dot_steps(const DotTiling& t) {
  std::vector<DotStep> steps;
  steps.reserve(t.steps);
  for (int64_t b = 0; b < t.batch; ++b)
    for (int64_t i = 0; i < t.row_tiles; ++i)
      for (int64_t j = 0; j < t.col_tiles; ++j)
        for (int64_t k = 0; k < t.k_blocks; ++k) steps.push_back({b, i, j, k});
  return steps;
}

}  // namespace tpusim::compiler
