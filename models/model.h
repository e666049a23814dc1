// The model interface: what a model declares, so that the step builders (workloads/loop/step_builder.h)
// and the parallel strategies (compiler/step/) need no model's names.
//
// A model declares
//   * its forward graph with the loss (ModelGraph), for a batch B and padded length S; the backward
//     pass is the generic autodiff (models/autodiff.h), the optimizer update models/optimizers.h;
//   * its parameters (trainable Parameters of that graph, named as in the model's state_dict) and
//     its per-step inputs and loss (ModelGraph::params, inputs, loss);
//   * its units: the forward cut into the modules FSDP wraps by default and gradient
//     checkpointing recomputes (ModelGraph::units; the repeated blocks flagged `layer`);
//   * its module tree (ModuleTree): which Hugging Face module class sits at each state_dict
//     prefix, and every class a wrapping policy may name (Trainer's transformer_layer_cls_to_wrap).
// TransformerModel (models/family.h) implements it for every model family.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/graph.h"
#include "models/sharding.h"

namespace tpusim::models {

// The model's modules as PyTorch nests them, named by state_dict prefixes ("" is the model itself).
class ModuleTree {
 public:
  virtual ~ModuleTree() = default;
  // Every module class of the model, in the order error messages list them.
  virtual const std::vector<std::string>& module_classes() const = 0;
  // The class of the module at `path`, a prefix of some parameter's name before its last '.'.
  // Containers that FSDP's size-based policy never wraps answer "ModuleList".
  virtual std::string module_class(const std::string& path) const = 0;
};

// A module's forward ops: node ids [first, last] (contiguous: a builder creates a module's ops,
// its parameters included, one after another).
struct ModuleRange {
  std::string name;    // the module's state_dict prefix, or a name for a group of modules ("heads")
  int first = -1, last = -1;
  bool layer = false;  // a repeated block (a transformer layer): what gradient checkpointing recomputes
};

// A model's forward graph for one batch shape.
struct ModelGraph {
  Graph graph;
  int loss = -1;            // scalar; a graph output
  int logits = -1;          // the head's output
  std::vector<int> params;  // trainable parameters in module order (tied weights once)
  std::vector<int> inputs;  // per-step inputs
  // The forward pass cut into the units FSDP wraps by default (torch_xla auto_wrap of each layer):
  // together they cover every forward node, in order.
  std::vector<ModuleRange> units;
  std::shared_ptr<const ModuleTree> modules;  // the model's module tree (never null)
};

// The shape and numerics of one step's graph, independent of the model.
struct StepShape {
  int64_t batch = 0;       // B
  int64_t seq = 0;         // S (padded length; encoder–decoder: the source)
  int64_t target = 0;      // T, padded target length of an encoder–decoder (task seq2seq); 0 otherwise
  DType dtype = DType::kF32;             // every float tensor
  std::optional<DType> param_dtype{};    // stored trainable parameters (autocast: f32 master weights); unset: dtype
  bool training = true;                  // dropout on; off for evaluation graphs
  DotPrecision precision = DotPrecision::kDefault;  // dot precision
  // Flash attention (models/graph.h, Graph::attention) instead of eager attention's materialized
  // [B, heads, S, S] scores, with these block sizes; the families that have it (Llama) read it.
  bool flash_attention = false;
  int64_t flash_block_q = 512, flash_block_kv = 512;
  // Tensor (Megatron) parallelism over this many replicas: the graph is one tensor replica's share
  // (its heads, MLP width and vocabulary logits), the split weights annotated (models/sharding.h).
  // Families without the splits refuse more than 1.
  int64_t tensor = 1;
  // Under tensor parallelism: the residual stream between the blocks split along the hidden
  // dimension over the tensor axis (MaxText's logical axis rule activation_embed -> tensor; the
  // reduce-scatter and all-gather form of Megatron's all-reduces, as Korthikanti et al.,
  // arXiv:2205.05198, do it along the sequence): each block's input all-gathered before its first
  // projections, its row-parallel output reduce-scattered, the norms on the replica's columns (their
  // sums all-reduced). false: the stream whole on every replica, the row-parallel outputs all-reduced.
  bool tensor_activations_sharded = false;
  // The replicas' mesh (the cores'), for the collectives a model writes itself: under sequence
  // (context) parallelism (mesh[kSequence] > 1) the graph is one sequence replica's block of the
  // tokens, and attention all-gathers the keys and values along the sequence axis. Families without
  // it refuse a sequence axis.
  Mesh mesh{};
  // Under sequence parallelism: each device's tokens are two chunks of S / (2 x replicas), chunk i
  // and its mirror 2 x replicas - 1 - i (MaxText's context_parallel_load_balance: the same causal
  // attention work on every device); false: one contiguous block.
  bool sequence_load_balance = false;
  // Quantized training (MaxText's AQT int8 / fp8): the decoder layers' projections run as quantized
  // matmuls, forward and backward (DotPrecision::kInt8, kFp8); kDefault: none. The LM head stays bf16.
  DotPrecision quantization = DotPrecision::kDefault;
};

// What every builder does with the graph it builds: record the forward nodes built since `first` as a
// unit (ModelGraph::units), and mark the outputs at the end (the loss; evaluation graphs the logits too).
inline void add_unit(ModelGraph& m, std::string name, int first, bool layer = false) {
  m.units.push_back({std::move(name), first, int(m.graph.nodes().size()) - 1, layer});
}
inline void mark_outputs(ModelGraph& m, bool training) {
  m.graph.mark_output(m.loss);
  if (!training) m.graph.mark_output(m.logits);
}

class Model : public ModuleTree {
 public:
  virtual std::string name() const = 0;
  // The forward graph with the loss. Throws ConfigError for a shape the model cannot take.
  virtual ModelGraph build_forward(const StepShape& shape) const = 0;
};

}  // namespace tpusim::models
