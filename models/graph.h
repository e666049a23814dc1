// The high-level op graph that models/ builds and compiler/ lowers: a small XLA-HLO-like op set.
// Shapes are row-major; the last dimension is the minor one (it maps to the 128 vector lanes).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "models/sharding.h"

namespace tpusim::models {

// kS32 holds integer inputs (token ids, labels, positions); it is never differentiated.
enum class DType : uint8_t { kF32, kBF16, kS32 };
inline uint32_t dtype_bytes(DType t) { return t == DType::kBF16 ? 2 : 4; }
inline const char* dtype_name(DType t) {
  return t == DType::kF32 ? "f32" : t == DType::kBF16 ? "bf16" : "s32";
}
inline bool is_float(DType t) { return t != DType::kS32; }
// A float dtype by its YAML name (f32, bf16); nullopt otherwise.
inline std::optional<DType> parse_float_dtype(std::string_view s) {
  if (s == "f32") return DType::kF32;
  if (s == "bf16") return DType::kBF16;
  return std::nullopt;
}

// An f32 dot's precision (XLA PrecisionConfig; torch_xla/JAX `precision`): how many bf16 MXU passes
// one f32 product takes — default 1, high 3 (bf16_3x), highest 6 (bf16_6x). bf16 dots take one.
// kDefault/kHigh/kHighest: XLA's precision config (fp32 operands in 1, 3 or 6 bf16 passes). kInt8,
// kFp8: a quantized matmul (MaxText's AQT): the operands quantized to int8 (fp8) in the kernel, the
// MXU at its int8 (fp8) rate, the result dequantized (compiler/lower/dot_parts.cc).
enum class DotPrecision : uint8_t { kDefault, kHigh, kHighest, kInt8, kFp8 };
inline const NameTable<DotPrecision>& enum_names(DotPrecision) {
  static const NameTable<DotPrecision> t = {{DotPrecision::kDefault, "default"}, {DotPrecision::kHigh, "high"},
                                            {DotPrecision::kHighest, "highest"}, {DotPrecision::kInt8, "int8"},
                                            {DotPrecision::kFp8, "fp8"}};
  return t;
}
inline bool is_quantized(DotPrecision p) { return p == DotPrecision::kInt8 || p == DotPrecision::kFp8; }
inline const char* dot_precision_name(DotPrecision p) { return enum_name(p); }
inline std::optional<DotPrecision> parse_dot_precision(std::string_view s) { return find_value(enum_names(DotPrecision{}), s); }

// What a Parameter holds: a per-step input (data, masks, labels, optimizer scalars), a trainable
// weight, or optimizer state (moments). Trainable weights and state persist across steps and are
// donated in place when the program outputs their updated value.
enum class ParamRole : uint8_t { kInput, kTrainable, kOptimizerState };

enum class ReduceOp : uint8_t { kSum, kMax };

enum class OpKind : uint8_t {
  kParameter,    // an input tensor resident in HBM
  kConstant,     // a scalar literal (free: folded into the consuming vector op)
  kDot,          // general matrix multiply (XLA DotGeneral)
  kElementwise,  // unary/binary element-wise op (operands already broadcast to the output shape)
  kBroadcast,    // replicate an operand along new dimensions
  kReduce,       // reduce one dimension (sum or max)
  kReshape,      // row-major reshape: a view, no data movement
  kTranspose,    // permute dimensions: data movement unless absorbed by a dot
  kConvert,      // change dtype
  kIota,         // index along one dimension of its shape (0, 1, 2, ...): position ids, one-hot
  kGather,       // rows of a table [R, ...] picked by integer ids: out = ids.shape ++ table.shape[1:]
  kScatterAdd,   // zeros [R, ...] plus updates added at rows ids (the VJP of kGather)
  kSlice,        // a contiguous range [start, start + shape[axis]) of one dimension (XLA slice, stride 1)
  kConcatenate,  // operands joined along one dimension (XLA concatenate)
  kCollective,   // a cross-replica collective (Node::collective): always a kernel of its own
  // Where an asynchronous collective's result is awaited (XLA's all-reduce-done, all-gather-done,
  // ...): its one operand is an async kCollective, its value that collective's (the same buffer).
  // The kernels scheduled between the collective and its done run while it is under way; the
  // kernels after the done wait for it. No work of its own. Also where a kHostOffload is awaited
  // (XLA's copy-done): its operand's HBM buffer is free after it.
  kCollectiveDone,
  // One output of a fused attention kernel (flash attention: Node::attention). After the kinds
  // above so that they keep their values (compilation cache keys hash them); new kinds go last.
  kAttention,
  // Host offload (XLA's copy-start/copy-done to and from pinned host memory, S(5)): out = operand.
  // kHostOffload copies a value from HBM to the host's RAM over PCIe, in the background from where
  // it is scheduled; its value lives in host memory, and the operand's HBM buffer is held until
  // its kCollectiveDone. kHostReload copies an offloaded value (a kHostOffload or its done) back
  // into HBM, in the background from where it is scheduled, awaited by its first reader. Each is a
  // kernel of its own (compiler/plan/fusion.h); autodiff never sees them (models/recompute.h
  // writes them after the backward is built).
  kHostOffload,
  kHostReload,
};

// XLA's cross-replica collectives. The graph is the program of one replica (SPMD: every replica
// runs it on its own data); a collective exchanges the operand with the other replicas of its
// group. Shapes (g = the group size):
//   kAllReduce          out = operand (the element-wise sum or max over the group)
//   kAllGather          out = operand with dimension `dim` multiplied by g (the members' operands
//                       concatenated along it, in group order)
//   kReduceScatter      out = operand with dimension `dim` divided by g (it must divide): member i
//                       keeps block i of the reduced operand
//   kAllToAll           out = operand (`dim` split into g blocks, block j sent to member j, the
//                       received blocks concatenated along it: XLA's array all-to-all with
//                       split_dimension = concat_dimension); g must divide dimension `dim`
//   kCollectivePermute  out = operand: each source replica sends it to its target; a replica that
//                       is no pair's target gets zeros (XLA)
// The compiler keeps a collective a kernel of its own (compiler/plan/fusion.h). compile_spmd_step runs
// it across the cores (compiler/collectives/graph_collectives.h); a program of one core (compile_graph) holds
// it as a zero-cost marked kernel: exact for a group of one replica (the identity), and for a larger
// group listed but not run (there is nobody to talk to). docs/hlo.md, "Collectives".
enum class CollectiveOp : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kCollectivePermute };
const char* collective_op_name(CollectiveOp op);  // "all-reduce", ... (XLA's opcodes)

// More replicas than any slice has cores (a v5p pod: 8960 chips): keeps a fuzzed replica count from
// sizing the checks' tables.
inline constexpr int64_t kMaxReplicas = int64_t(1) << 20;

struct CollectiveAttrs {
  CollectiveOp op = CollectiveOp::kAllReduce;
  // The replicas the program runs on (ids 0..replicas-1): replica i is the i-th core the SPMD
  // compile is given (compiler/step/spmd_step.h checks that they agree).
  int64_t replicas = 1;
  // Replica ids per group (XLA replica_groups); every group has the same size and together they
  // hold every replica once. Empty: one group of all replicas.
  std::vector<std::vector<int64_t>> groups;
  int dim = -1;                       // kAllGather, kReduceScatter, kAllToAll
  ReduceOp reduce = ReduceOp::kSum;   // kAllReduce, kReduceScatter (XLA's to_apply)
  std::vector<std::pair<int64_t, int64_t>> pairs;  // kCollectivePermute: (source, target) replica ids
  // Asynchronous (XLA's -start/-done pairs): the collective runs in the background from where it is
  // scheduled until its result is awaited: at its kCollectiveDone when the graph has one, else at
  // the first kernel reading it; the kernels in between run meanwhile.
  bool async = false;
  // Collectives of one id (>= 0) are one combined collective (XLA's all-reduce combiner: a
  // tuple-shaped all-reduce of several operands): the compiler runs them as one transfer of their
  // summed bytes, a kernel of its own (compiler/plan/fusion.h). They have the same attributes.
  int64_t combine = -1;
  // torch_xla FSDP's flat parameter (XlaFullyShardedDataParallel, flatten_parameters): the collective
  // moves one flat buffer of group_size() x shard elements, laid out from the tensors it stands for.
  // A flat all-gather is a combined one (`combine`) of one part per tensor, each part's operand the
  // shard [S] and its result the tensor (Graph::flat_all_gather); a flat reduce-scatter is one node
  // whose operands are the tensors and whose result is the shard (Graph::flat_reduce_scatter).
  bool flat = false;
  // Multislice: the collective also spans this many slices over the data-center network, the same
  // groups in every slice (a sum over the data axes, which the slices extend). 1: within the slice.
  int64_t slices = 1;
  // The mesh axis it runs along (the partitioner's; none for an imported module's): reports only.
  std::optional<MeshAxis> axis;

  int64_t group_size() const { return groups.empty() ? replicas : int64_t(groups.front().size()); }
  // Nothing to exchange: groups of one replica on one slice (the identity). A collective-permute's
  // pairs decide for it, not its groups.
  bool local() const { return op != CollectiveOp::kCollectivePermute && group_size() <= 1 && slices <= 1; }
  // The groups with the empty form spelled out: {{0, 1, ..., replicas-1}}.
  std::vector<std::vector<int64_t>> resolved_groups() const;
};

// Flash attention (FlashAttention-2, Dao 2023; on TPU MaxText's splash attention and PyTorch/XLA's
// Pallas flash_attention): softmax(scale * q k^T + mask) v computed block by block in VMEM with an
// online softmax, so that the [S, S] scores never reach HBM. Shapes: q [B, heads, S, hd]; k, v
// [B, kv_heads, Skv, hd] (kv_heads divides heads: query head h reads key/value head
// h / (heads / kv_heads), grouped-query attention).
//   forward:  kOut [B, heads, S, hd] (q's dtype), kLse [B, heads, S] f32 (each query row's
//             log-sum-exp, kept for the backward);
//   backward: from (q, k, v, out, lse, d_out): kDq, kDk, kDv of q's, k's and v's shapes (the
//             probabilities recomputed from q, k and lse).
// The parts of one call (`call`) are one kernel (compiler/plan/fusion.h); its lowering is
// compiler/lower/lower_attention.cc.
enum class AttentionPart : uint8_t { kOut, kLse, kDq, kDk, kDv };
struct AttentionAttrs {
  int64_t call = -1;  // the kernel the part belongs to (Graph::attention, attention_grad number them)
  AttentionPart part = AttentionPart::kOut;
  bool causal = true;   // key j is masked for query i < j (query i at position q_offset + i)
  int64_t window = 0;   // sliding window: key j is masked for query i >= j + window (Mistral); 0: none
  // The first query's position among the keys: 0 when they are one sequence; under sequence
  // parallelism a replica's queries are its block (or chunks) of the sequence, its keys the
  // gathered whole (the last replica's block starts at (replicas - 1) x its length). Keys after the
  // last query are masked whole under the causal mask (never loaded).
  int64_t q_offset = 0;
  // Block sizes (MaxText's sa_block_q and sa_block_kv, default 512): the query rows and key rows
  // one step of the kernel holds in VMEM.
  int64_t block_q = 512, block_kv = 512;
  double scale = 1;  // the scores' factor (1 / sqrt(hd))

  bool operator==(const AttentionAttrs&) const = default;
};

// Compares produce a 0/1 mask in the operand's dtype (XLA's compare followed by a select or
// convert, folded into one op). kDropoutMask ignores its operand's values: it draws a keep mask of
// its shape scaled by 1/(1-rate) (Node::rate), so dropout(x) = x * dropout_mask(x).
enum class EwOp : uint8_t {
  kAdd, kSub, kMul, kDiv, kMax, kExp, kRsqrt, kRelu, kNeg,
  kTanh, kErf, kLog, kSqrt, kCmpEq, kCmpGt, kDropoutMask,
};

using Dims = std::vector<int64_t>;

struct DotDims {
  std::vector<int> lhs_batch, rhs_batch;        // paired batch dimensions
  std::vector<int> lhs_contract, rhs_contract;  // paired contracting dimensions
};

struct Node {
  int id = -1;
  OpKind kind = OpKind::kParameter;
  std::string name;
  Dims shape;
  DType dtype = DType::kF32;
  std::vector<int> inputs;
  EwOp ew = EwOp::kAdd;          // kElementwise
  ReduceOp reduce = ReduceOp::kSum;  // kReduce
  int reduce_dim = -1;           // kReduce: the reduced dimension of the operand
  DotDims dot;                   // kDot
  DotPrecision precision = DotPrecision::kDefault;  // kDot
  std::vector<int> broadcast_dims;    // kBroadcast: output dim of each operand dim
  std::vector<int> permutation;       // kTranspose: output dim i = operand dim permutation[i]
  double constant = 0;                // kConstant
  ParamRole role = ParamRole::kInput;  // kParameter
  int iota_dim = -1;                   // kIota: the dimension that counts
  double rate = 0;                     // kElementwise kDropoutMask: drop probability
  int axis = -1;                       // kSlice, kConcatenate: the sliced or joined dimension
  int64_t start = 0;                   // kSlice: first index taken along `axis`
  CollectiveAttrs collective;          // kCollective
  AttentionAttrs attention;            // kAttention
  bool stop_gradient = false;          // autodiff treats this value as a constant (e.g. softmax's max)
  // The value is the result of an op that XLA does not fuse into its consumers (e.g. a batch norm
  // computed by its own emitter): the compiler materializes it in HBM (compiler/plan/fusion.h).
  bool materialize = false;
  // The kernel this node belongs to when the graph comes already fused (an XLA after-optimizations
  // module: one group per `fusion` instruction and per unfused instruction; Graph::groups() names
  // them). -1: none, the compiler's fusion decides (compiler/plan/fusion.h).
  int group = -1;
  // How this replica's value relates to the tensor the SPMD program means (models/sharding.h):
  // set by the step builders, read by the partitioner (compiler/step/partition.h).
  TensorSharding sharding;
};

// No tensor has more elements than this: 2^40 (a TiB of bytes) exceeds the HBM of any TPU chip
// (95 GiB on v5p), and keeps element and byte counts far from int64 overflow.
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

inline int64_t num_elements(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// A graph under construction. Builders infer shapes and check operands; errors are
// std::invalid_argument (programming errors in a model builder, not user input).
class Graph {
 public:
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int id) const { return nodes_.at(id); }
  const std::vector<int>& outputs() const { return outputs_; }
  void mark_output(int id) { outputs_.push_back(id); }

  int parameter(const std::string& name, Dims shape, DType dtype, ParamRole role = ParamRole::kInput);
  int constant(double value, DType dtype);
  int dot(int lhs, int rhs, DotDims dims, DotPrecision precision, const std::string& name = "dot");
  int ew(EwOp op, int a, int b = -1, const std::string& name = "");
  int broadcast(int x, Dims shape, std::vector<int> broadcast_dims);
  int reduce(int x, int dim, ReduceOp op);
  int reshape(int x, Dims shape);
  int transpose(int x, std::vector<int> permutation);
  int convert(int x, DType to);
  int iota(Dims shape, int dim, DType dtype);
  // out[i..., j...] = table[ids[i...], j...]; ids must be kS32.
  int gather(int table, int ids, const std::string& name = "gather");
  // out = zeros [rows, updates.shape[ids.rank:]...]; out[ids[i...], j...] += updates[i..., j...].
  int scatter_add(int updates, int ids, int64_t rows, const std::string& name = "scatter_add");
  int dropout_mask(int x, double rate, const std::string& name = "dropout_mask");
  // x[..., start:limit, ...] along `axis` (0 <= start < limit <= extent).
  int slice(int x, int axis, int64_t start, int64_t limit, const std::string& name = "slice");
  // The operands (equal shapes but along `axis`, one dtype) joined along `axis`, in order.
  int concatenate(const std::vector<int>& xs, int axis, const std::string& name = "concatenate");
  // A collective over `x` (CollectiveOp has the shape rules). Refuses (std::invalid_argument)
  // groups that are not a partition of the replicas into groups of one size, a dimension out of
  // range or not divisible as the op needs, a permute pair outside the replicas or a source or
  // target named twice.
  int collective(int x, CollectiveAttrs attrs, const std::string& name = "");
  // The point where the async collective or host offload `x` is awaited (OpKind::kCollectiveDone);
  // refuses an `x` that is neither an asynchronous collective nor a kHostOffload.
  int collective_done(int x, const std::string& name = "");
  // `x` copied to host memory (OpKind::kHostOffload), and an offloaded value `h` (a kHostOffload or
  // its done) copied back into HBM (kHostReload). Both keep `x`'s shape, dtype and sharding.
  int host_offload(int x, const std::string& name = "");
  int host_reload(int h, const std::string& name = "");
  // A part of a flat all-gather (CollectiveAttrs::flat; attrs.op kAllGather, attrs.combine the
  // gather's id): the tensor of `shape` gathered from the 1-D shard `shard`. Refuses a `shape`
  // with more elements than the gathered buffer's group x shard.
  int flat_all_gather(int shard, Dims shape, CollectiveAttrs attrs, const std::string& name = "");
  // A flat reduce-scatter (CollectiveAttrs::flat; attrs.op kReduceScatter): the tensors `xs` laid
  // end to end, reduced over the group and scattered; each member keeps a 1-D shard of
  // `shard_elements` (the tensors' elements in all at most group x shard_elements; one dtype).
  int flat_reduce_scatter(const std::vector<int>& xs, int64_t shard_elements, CollectiveAttrs attrs,
                          const std::string& name = "");
  // Flash attention's forward (AttentionAttrs; attrs.call and attrs.part are set here): the output
  // and the log-sum-exp, one kernel. Refuses shapes that do not pair up as AttentionAttrs says.
  struct AttentionValues {
    int out = -1, lse = -1;
  };
  AttentionValues attention(int q, int k, int v, AttentionAttrs attrs, const std::string& name = "attention");
  // Its backward, one kernel: the gradients of q, k and v.
  struct AttentionGrads {
    int dq = -1, dk = -1, dv = -1;
  };
  AttentionGrads attention_grad(int q, int k, int v, int out, int lse, int d_out, AttentionAttrs attrs,
                                const std::string& name = "attention.grad");
  // Attention calls are numbered from 0; the next number (copies of a call made by a rewrite, such
  // as models/recompute.h, take new ones from here).
  int64_t attention_calls() const { return attention_calls_; }
  // A tensor of `shape` filled with `value` (a broadcast scalar constant).
  int full(double value, Dims shape, DType dtype);
  void set_stop_gradient(int id) { nodes_.at(id).stop_gradient = true; }
  // Names a node after the fact (builders without a name argument; the HLO import names nodes
  // after their instructions so that kernels are named so).
  void set_name(int id, std::string name) { nodes_.at(id).name = std::move(name); }
  void set_materialize(int id) { nodes_.at(id).materialize = true; }
  void set_sharding(int id, TensorSharding s) { nodes_.at(size_t(id)).sharding = s; }
  // A new fusion group named `name` (its kernel's name); set_group puts a node in it.
  int add_group(std::string name) {
    groups_.push_back(std::move(name));
    return int(groups_.size()) - 1;
  }
  void set_group(int id, int group) { nodes_.at(id).group = group; }
  const std::vector<std::string>& groups() const { return groups_; }
  // A scheduled graph's node order is the order its kernels run in (XLA's scheduled module,
  // `is_scheduled=true`): the compiler keeps it (compiler/plan/fusion.h) instead of choosing its own.
  void set_scheduled(bool on) { scheduled_ = on; }
  bool scheduled() const { return scheduled_; }
  // Appends a copy of `n` (any op, already checked by the graph it came from) with a new id; its
  // inputs must be ids of this graph. For graph rewrites (models/recompute.h).
  int append_copy(Node n) { return add(std::move(n)); }
  // Moves node `id` out, leaving its name and lists empty: for a rewrite into a new graph of a graph
  // that is discarded afterwards (its other nodes stay readable until they are taken).
  Node take_node(int id) { return std::move(nodes_.at(size_t(id))); }

  // Element-wise binary op with `b` broadcast along the dimensions of `a` it lacks: `b_dims` lists
  // the dimension of `a` that each dimension of `b` maps to (empty for a scalar constant).
  int ew_bcast(EwOp op, int a, int b, std::vector<int> b_dims, const std::string& name = "");

 private:
  int add(Node n);
  std::vector<Node> nodes_;
  std::vector<int> outputs_;
  std::vector<std::string> groups_;
  bool scheduled_ = false;
  int64_t attention_calls_ = 0;
};

// The block pairs (query block i, key block j) a flash attention call computes over s_q queries and
// s_kv keys: every pair but those the causal mask or the sliding window masks whole (skipped).
// `masked`: the pair is masked in part (its scores go through the mask). In (i, j) order.
struct AttentionBlock {
  int64_t i = 0, j = 0, rows = 0, cols = 0;
  bool masked = false;
};
std::vector<AttentionBlock> attention_blocks(int64_t s_q, int64_t s_kv, const AttentionAttrs& a);

// The MXU flops of a flash attention call, per (batch, head) pair summed over its computed blocks:
// the forward (its kOut part) 2 matmuls per block pair (q k^T, p v), the backward (its kDq part)
// 7 (splash attention's dkv pass: q k^T, dO v^T, p^T dO, dS^T q; its dq pass: q k^T, dO v^T, dS k),
// 2 x rows x cols x hd each; the call's other parts 0.
uint64_t attention_flops(const Graph& g, const Node& n);
// Of a backward's flops, those that recompute what the model's flops count once (the kDq part: 3
// of its 7 matmuls: q k^T in both passes and dO v^T in the dq pass; the model's backward is 4 —
// dv, dP, dq, dk): hardware flops, not model flops (MFU leaves them out).
uint64_t attention_recompute_flops(const Graph& g, const Node& n);

// The flops of a kDot node: a multiply-add (2 flop) per output element per contracted element,
// 2 x B x M x N x K = 2 x (output elements) x K.
inline uint64_t dot_flops(const Graph& g, const Node& n) {
  int64_t k = 1;
  for (int d : n.dot.lhs_contract) k *= g.node(n.inputs[0]).shape.at(d);
  return uint64_t(2 * num_elements(n.shape) * k);
}

}  // namespace tpusim::models
