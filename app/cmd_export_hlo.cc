// `tpusim export-hlo --workload FILE [--set PATH=VALUE]... [--variant train|eval] [-o OUT.hlo]`: the
// graph tpusim simulates for a workload, as XLA HLO text (compiler/hlo/hlo_export.h, docs/hlo.md
// "Export"). A training workload gives one device core's step program; a kernel workload its kernel.
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "app/commands.h"
#include "compiler/collectives/collectives.h"
#include "compiler/hlo/hlo_export.h"
#include "compiler/step/data_parallel.h"
#include "compiler/step/fsdp.h"
#include "models/kernels.h"
#include "workloads/loop/framework.h"
#include "workloads/loop/kernel_run.h"
#include "workloads/loop/step_builder.h"

namespace tpusim::app {
namespace {

struct ExportHloArgs {
  RunArgs run;  // --hw, --workload, --set
  std::string out;
  std::string variant = "train";
  uint32_t batch = 0, seq = 0, target = 0;  // 0: the workload's largest shape
};

// The collectives of `op` in a graph (a combined one once).
size_t count_collectives(const models::Graph& g, models::CollectiveOp op) {
  std::set<int64_t> combined;
  size_t n = 0;
  for (const models::Node& x : g.nodes())
    if (x.kind == models::OpKind::kCollective && x.collective.op == op &&
        (x.collective.combine < 0 || combined.insert(x.collective.combine).second))
      ++n;
  return n;
}

std::string export_training(const ExportHloArgs& a, const WorkloadConfig& w, const HwConfig& hw,
                            const std::string& origin, const std::string& hw_origin) {
  const TrainingWorkload& t = w.training();
  StepVariant v;
  if (a.variant == "eval") {
    v.kind = GraphKind::kEval;
    v.batch = variant_batch(t, hw, a.batch ? a.batch : t.eval_per_device_batch_size ? t.eval_per_device_batch_size : t.per_device_batch_size,
                            a.batch ? "--batch" : "eval_per_device_batch_size");
  } else {
    // The first optimizer step: its own graph when the framework creates the optimizer state in
    // it (torch.optim); it reads the .grad buffers when micro-steps accumulated into them.
    v.kind = framework_personality(t).lazy_optimizer_state ? GraphKind::kTrainFirstStep : GraphKind::kTrain;
    v.batch = variant_batch(t, hw, a.batch ? a.batch : t.per_device_batch_size, a.batch ? "--batch" : "per_device_batch_size");
    v.grad_buffers = t.gradient_accumulation_steps > 1;
  }
  // The largest padded shape, which is every batch's under padding: max_length (an image task has
  // one length); --batch/--seq/--target pick another.
  const uint32_t image = image_tokens(t);
  v.seq = image ? image : t.max_length;
  v.target = t.task == Task::kSeq2seq ? t.max_target_length : 0;
  if (a.seq) v.seq = a.seq;
  if (a.target) {
    if (t.task != Task::kSeq2seq)
      throw input_error("--target", "applies to a seq2seq workload only (task: seq2seq)", std::to_string(a.target), "drop --target");
    v.target = a.target;
  }
  if (t.quantization != Quantization::kNone)
    throw input_error("quantization", "cannot be exported yet: AQT's quantize and dequantize ops and the 8-bit dots are not written as HLO",
                      std::string(enum_name(t.quantization)), "export with --set quantization=none");
  if (hw.multislice.slices > 1)
    throw input_error("multislice.slices", "cannot be exported: one HLO module's replica groups span one slice, and the "
                      "sums across slices are XLA's multislice runtime's",
                      std::to_string(hw.multislice.slices), "export with --set multislice.slices=1");
  const std::unique_ptr<models::Model> model = make_model(t);
  const std::unique_ptr<StepGraph> sg = build_step_graph(*model, t, hw, v);

  hlo::HloExportOptions o;
  o.module_name = fmt::format("{}_{}", w.name, graph_kind_name(v.kind));
  o.comment.push_back(fmt::format("Exported by tpusim export-hlo from {} on {}: the {} step{} at B={} S={}{} per device, the "
                                  "program of one core{}: forward{} as tpusim simulates it.",
                                  origin, hw_origin, graph_kind_name(v.kind), v.grad_buffers ? " (with .grad buffers)" : "",
                                  v.batch, v.seq, v.target ? fmt::format(" T={}", v.target) : "",
                                  cores_per_device(hw.chip) > 1 ? " (the device's cores split the batch)" : "",
                                  v.kind == GraphKind::kEval ? "" : ", backward and optimizer update"));
  // The step tpusim compiles (compiler/step/): scheduled, with its collectives over the slice's
  // cores, so that the module run as kind: hlo with as many replicas takes the native step's time.
  const compiler::SpmdStep step = sg->fsdp ? compiler::fsdp_step(*sg->fsdp, hw) : compiler::data_parallel_step(sg->dp, hw);
  o.donated = step.donated;
  const size_t allreduces = count_collectives(step.graph, models::CollectiveOp::kAllReduce);
  if (sg->fsdp) {
    o.comment.push_back(fmt::format(
        "FSDP over the slice's {} cores (replica_count): each unit's parameter slice all-gathered as one flat buffer "
        "({} all-gathers) and cut into its tensors, its gradients flattened and reduce-scattered into the slice "
        "({} reduce-scatters){}; the update reads the gradient slices.",
        step.cores.size(), count_collectives(step.graph, models::CollectiveOp::kAllGather),
        count_collectives(step.graph, models::CollectiveOp::kReduceScatter),
        sg->fsdp->step.overlap ? ", asynchronous (-start/-done, async-start/-done) beside the kernels" : ""));
  } else if (allreduces > 0) {
    o.comment.push_back(fmt::format(
        "The gradients are all-reduced over the slice's {} cores (replica_count) in {} combined all-reduces of at most {} "
        "MiB{}, as tpusim's compiler runs the data-parallel step; the optimizer update reads the reduced gradients.",
        step.cores.size(), allreduces, sg->dp.allreduce_bucket_bytes >> 20,
        sg->dp.overlap_allreduce ? " (all-reduce-start/done: overlapping the rest of the backward pass)" : ""));
  } else {
    o.comment.push_back("No collectives: the step has no gradients to all-reduce, or runs on one core.");
  }
  return hlo::export_hlo(step.graph, o);
}

int export_hlo_command(const ExportHloArgs& a) {
  if (a.variant != "train" && a.variant != "eval")
    throw input_error("--variant", "must be train or eval", a.variant, "--variant train (the first optimizer step) or --variant eval");
  std::vector<Override> all;
  for (const auto& s : a.run.sets) all.push_back(parse_override(s));
  const SplitOverrides split = split_overrides(all);
  std::string hw_origin, origin;
  const WorkloadConfig w = load_workload(a.run, split.workload, &origin);
  const HwConfig hw = load_hw(a.run, split.hw, &hw_origin, &w);

  std::string text;
  if (w.kind() == WorkloadKind::kHlo)
    throw input_error("--workload", "is a workload of kind: hlo, already an HLO module", origin,
                      "export a training or kernel workload; run this one with tpusim run");
  if (w.kind() == WorkloadKind::kTraining) {
    text = export_training(a, w, hw, origin, hw_origin);
  } else {
    if (a.variant != "train" || a.batch || a.seq || a.target)
      throw input_error("--workload", "--variant, --batch, --seq and --target apply to a training workload", origin,
                        "drop them for a kernel workload");
    const compiler::KernelRequest req = kernel_request(w.kernel());
    const models::Graph g = models::build_kernel({req.kernel, req.shape, req.dtype, req.precision});
    hlo::HloExportOptions o;
    o.module_name = w.name.empty() ? req.kernel : w.name;
    o.comment.push_back(fmt::format("Exported by tpusim export-hlo from {}: the {} kernel as tpusim simulates it.", origin, req.kernel));
    text = hlo::export_hlo(g, o);
  }
  if (a.out.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream f(a.out, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw input_error("-o", "cannot be written", a.out, "give a writable file path");
  return 0;
}

}  // namespace

Subcommand add_export_hlo_command(CLI::App& cli) {
  auto args = std::make_shared<ExportHloArgs>();
  CLI::App* cmd = cli.add_subcommand(
      "export-hlo", "Write the graph tpusim simulates for a training or kernel workload as XLA HLO text (docs/hlo.md)");
  cmd->add_option("--hw", args->run.hw_file, "Hardware YAML or built-in name (default: the workload's hw:, else v3-8)")
      ->type_name("FILE|NAME");
  cmd->add_option("--workload", args->run.workload_file, "Workload YAML (training or kernel)")->required()->type_name("FILE");
  cmd->add_option("--set", args->run.sets, "Override a config key first: PATH=VALUE (repeatable)")->type_name("PATH=VALUE");
  cmd->add_option("--variant", args->variant, "train (the first optimizer step, default) or eval");
  cmd->add_option("--batch", args->batch, "Examples per device (default: per_device_batch_size)");
  cmd->add_option("--seq", args->seq, "Padded tokens per example (default: max_length)");
  cmd->add_option("--target", args->target, "seq2seq: padded target tokens (default: max_target_length)");
  cmd->add_option("-o,--out", args->out, "Write the module here instead of standard output")->type_name("OUT.hlo");
  return {cmd, [args] { return export_hlo_command(*args); }};
}

}  // namespace tpusim::app
