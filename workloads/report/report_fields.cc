#include "workloads/report/report_fields.h"

#include <fmt/format.h>

namespace tpusim {

const char* report_kind_name(ReportKind k) {
  switch (k) {
    case kTrainingReport: return "training";
    case kKernelReport: return "kernel";
    case kHloReport: return "hlo";
  }
  return "?";
}

std::string ReportField::dotted_path() const {
  std::string k = path[0] == '/' ? path + 1 : path;
  for (char& c : k)
    if (c == '/') c = '.';
  return k;
}

std::string ReportField::key_in_units() const { return *units_key ? units_key : dotted_path(); }

namespace {

constexpr unsigned kT = kTrainingReport, kK = kKernelReport, kH = kHloReport;

// Units report.json gives several figures.
constexpr const char* kEnergyJ = "J (whole slice; kernel runs: the kernel's chips)";
constexpr const char* kTflop = "TFLOP/s (10^12 flop/s)";
constexpr const char* kGbyte = "GB/s (10^9 bytes/s)";
constexpr const char* kAtPeak = "bytes (per device, at the peak)";
constexpr const char* kChipHourPrice = "the chip-hour price (`chip.cost.usd_per_chip_hour`, editable with --set)";

std::vector<ReportField> training_fields() {
  return {
      {.kinds = kT, .path = "/summary/total_time_s", .unit = "s", .doc = "simulated wall-clock time of the whole run",
       .column = "total_time_s", .compare = {"time", "total time"}},
      {.kinds = kT, .path = "/summary/steady_step_time_s", .unit = "s",
       .doc = "median train step without a compile or a first execution", .column = "steady_step_time_s",
       .compare = {"time", "steady step time"}},
      {.kinds = kT, .path = "/summary/examples_per_s", .unit = "examples/s",
       .doc = "training examples over the whole run's time", .column = "examples_per_s",
       .compare = {"time", "end-to-end throughput"}},
      {.kinds = kT, .path = "/summary/steady_examples_per_s", .unit = "examples/s",
       .doc = "global batch over the steady step time", .column = "steady_examples_per_s",
       .compare = {"time", "steady throughput"}},
      {.kinds = kT, .path = "/summary/steady_tokens_per_s_per_chip", .unit = "tokens/s",
       .doc = "steady train steps' tokens (examples x padded length) over their time, per chip of the slice",
       .column = "tokens_per_s_per_chip", .compare = {"time", "tokens/s per chip"}},
      {.kinds = kT, .path = "/summary/compiles", .unit = "count", .doc = "XLA compilations of the busiest process",
       .column = "compiles", .compare = {"compiles", "compiles"}, .report_unit = "count (busiest process)"},
      {.kinds = kT, .path = "/summary/compile_time_s", .unit = "s", .doc = "compilation time of the busiest process",
       .column = "compile_time_s", .compare = {"compiles", "compile time"}, .report_unit = "s (busiest process)"},
      {.kinds = kT, .path = "/summary/busiest_process", .unit = "index",
       .doc = "the process with the most compiles, whose torch_xla metrics the summary shows",
       .report_unit = "process index"},
      {.kinds = kT, .path = "/summary/warmup_time_s", .unit = "s", .doc = "start to the first steady train step (the first without a compile or a first execution)",
       .column = "warmup_time_s", .compare = {"compiles", "warm-up"}},
      {.kinds = kT, .path = "/summary/upload_time_s", .unit = "s",
       .doc = "the very first execution's upload of the parameters and first batch over each chip's PCIe link"},
      {.kinds = kT, .path = "/summary/peak_hbm_bytes", .unit = "bytes",
       .doc = "peak HBM use per device (core; chip under megacore)", .column = "peak_hbm_bytes",
       .compare = {"memory", "peak HBM per device"}, .report_unit = "bytes (per device)"},
      {.kinds = kT, .path = "/summary/mxu_utilization", .unit = "fraction",
       .doc = "flops over device time at the bf16 MXU peak", .column = "mxu_utilization",
       .compare = {"utilization", "MXU utilization"}},
      {.kinds = kT, .path = "/summary/mfu", .unit = "fraction",
       .doc = "model flops (the step program's dot flops, no recomputation) over steady step time at the bf16 peak of "
              "every core",
       .column = "mfu",
       .compare = {"utilization", "MFU"}},
      {.kinds = kT, .path = "/summary/mfu_6nd", .unit = "fraction",
       .doc = "6 x parameters x steady training tokens/s per chip over a chip's bf16 peak (the 6ND rule: attention "
              "and recomputation not counted)",
       .column = "mfu_6nd", .compare = {"utilization", "MFU (6ND)"}},
      {.kinds = kT, .path = "/summary/allreduce_share", .unit = "fraction",
       .doc = "exposed all-reduce time over steady device time", .column = "allreduce_share",
       .compare = {"utilization", "all-reduce share"}, .report_unit = "fraction (of steady device time)"},
      {.kinds = kT, .path = "/summary/collective_share", .unit = "fraction",
       .doc = "exposed time of every collective (FSDP all-gathers, reduce-scatters too) over steady device time",
       .column = "collective_share", .compare = {"utilization", "collective share"},
       .report_unit = "fraction (of steady device time)"},
      {.kinds = kT, .path = "/summary/padding_waste", .unit = "fraction", .doc = "padding tokens over all tokens",
       .column = "padding_waste", .compare = {"utilization", "padding waste"}, .report_unit = "fraction of tokens"},
      {.kinds = kT, .path = "/summary/train_steps", .unit = "count", .doc = "training micro-steps run",
       .column = "train_steps"},
      {.kinds = kT, .path = "/summary/eval_steps", .unit = "count", .doc = "evaluation steps run"},
      {.kinds = kT, .path = "/summary/optimizer_steps", .unit = "count",
       .doc = "optimizer updates (one per gradient_accumulation_steps train steps)"},
      {.kinds = kT, .path = "/summary/train_examples", .unit = "examples",
       .doc = "training examples over the run"},
      {.kinds = kT, .path = "/summary/epochs_run", .unit = "count", .doc = "epochs run (the last may be partial)"},
      // The breakdown sums to total_time_s.
      {.kinds = kT, .path = "/summary/breakdown_s/compile", .unit = "s", .doc = "time breakdown: XLA compilation",
       .column = "breakdown_compile_s", .compare = {"breakdown", "compile"}, .units_key = "summary.breakdown_s"},
      {.kinds = kT, .path = "/summary/breakdown_s/warmup", .unit = "s",
       .doc = "time breakdown: program load, parameter upload", .column = "breakdown_warmup_s",
       .compare = {"breakdown", "warm-up"}, .units_key = "summary.breakdown_s"},
      {.kinds = kT, .path = "/summary/breakdown_s/host", .unit = "s", .doc = "time breakdown: host tracing, dispatch, sync",
       .column = "breakdown_host_s", .compare = {"breakdown", "host"}, .units_key = "summary.breakdown_s"},
      {.kinds = kT, .path = "/summary/breakdown_s/device", .unit = "s", .doc = "time breakdown: device compute",
       .column = "breakdown_device_s", .compare = {"breakdown", "device compute"}, .units_key = "summary.breakdown_s"},
      {.kinds = kT, .path = "/summary/breakdown_s/allreduce", .unit = "s", .doc = "time breakdown: gradient all-reduce",
       .column = "breakdown_allreduce_s", .compare = {"breakdown", "all-reduce"}, .units_key = "summary.breakdown_s"},
      {.kinds = kT, .path = "/summary/breakdown_s/eval", .unit = "s", .doc = "time breakdown: evaluation",
       .column = "breakdown_eval_s", .compare = {"breakdown", "evaluation"}, .units_key = "summary.breakdown_s"},
      {.kinds = kT, .path = "/summary/breakdown_s/batch_search", .unit = "s",
       .doc = "time breakdown: the failed attempts of the batch size search", .units_key = "summary.breakdown_s",
       .when = "`auto_find_batch_size` found a batch size"},
      {.kinds = kT, .path = "/summary/sharding", .doc = "`data_parallel` or `fsdp`"},
      {.kinds = kT, .path = "/summary/mesh/data", .unit = "count", .doc = "devices on the mesh's data axis (docs/training.md, \"Meshes\")"},
      {.kinds = kT, .path = "/summary/mesh/fsdp", .unit = "count", .doc = "devices on the mesh's fsdp axis"},
      {.kinds = kT, .path = "/summary/mesh/sequence", .unit = "count", .doc = "devices on the mesh's sequence axis"},
      {.kinds = kT, .path = "/summary/mesh/tensor", .unit = "count", .doc = "devices on the mesh's tensor axis",
       .column = "mesh_tensor"},
      {.kinds = kT, .path = "/summary/mesh/dcn_data", .unit = "count",
       .doc = "slices on the data axis across the data-center network (multislice; docs/training.md, \"Multislice\")",
       .column = "mesh_dcn_data"},
      // The per-device HBM at the peak of the program with the highest peak.
      {.kinds = kT, .path = "/summary/memory/parameter_bytes", .unit = "bytes",
       .doc = "memory at the peak: parameters (FSDP: the slices)", .compare = {"memory", "parameters"},
       .report_unit = kAtPeak, .units_key = "summary.memory.*"},
      {.kinds = kT, .path = "/summary/memory/gathered_parameter_bytes", .unit = "bytes",
       .doc = "memory at the peak: all-gathered FSDP units live at the peak", .compare = {"memory", "gathered parameters"},
       .report_unit = kAtPeak, .units_key = "summary.memory.*"},
      {.kinds = kT, .path = "/summary/memory/gradient_bytes", .unit = "bytes", .doc = "memory at the peak: gradients",
       .compare = {"memory", "gradients"}, .report_unit = kAtPeak, .units_key = "summary.memory.*"},
      {.kinds = kT, .path = "/summary/memory/optimizer_state_bytes", .unit = "bytes",
       .doc = "memory at the peak: optimizer state", .compare = {"memory", "optimizer state"}, .report_unit = kAtPeak,
       .units_key = "summary.memory.*"},
      {.kinds = kT, .path = "/summary/memory/activation_bytes", .unit = "bytes",
       .doc = "memory at the peak: activations, inputs, temporaries", .compare = {"memory", "activations"},
       .report_unit = kAtPeak, .units_key = "summary.memory.*"},
      {.kinds = kT, .path = "/summary/memory/peak_bytes", .unit = "bytes", .doc = "memory at the peak: their sum, the per-device HBM at the peak of the program with the highest peak",
       .report_unit = kAtPeak, .units_key = "summary.memory.*"},
      // `*`: allreduce, allgather, reducescatter, dcn.
      {.kinds = kT, .path = "/summary/collectives/*/time_s", .unit = "s",
       .doc = "per kind of collective (`*`: allreduce, allgather, reducescatter; dcn: a multislice all-reduce's part "
              "across the data-center network), the time the profiled core spent inside it, hidden or not, summed over "
              "the train steps (the engines' collective statistics)",
       .report_unit = "s (the profiled core, all train steps)"},
      {.kinds = kT, .path = "/summary/collectives/*/exposed_s", .unit = "s",
       .doc = "the part of time_s during which the core ran no work of its own (steps[].allreduce_s for the all-reduce)",
       .report_unit = "s (the profiled core, all train steps)"},
      {.kinds = kT, .path = "/summary/collectives/*/bytes", .unit = "bytes",
       .doc = "the compiler's bytes of that kind per core, summed over the train steps",
       .report_unit = "bytes (per core, all train steps)"},
      // `*`: data, fsdp, sequence, tensor, dcn.
      {.kinds = kT, .path = "/summary/collectives_by_axis/*/time_s", .unit = "s",
       .doc = "per mesh axis (`*`: data, fsdp, sequence, tensor: the collectives along it within a slice, "
              "whatever their kind; dcn: the parts across slices), the time the profiled core spent inside them, "
              "hidden or not, summed over the train steps; 0 for an axis nothing ran along",
       .report_unit = "s (the profiled core, all train steps)"},
      {.kinds = kT, .path = "/summary/collectives_by_axis/*/exposed_s", .unit = "s",
       .doc = "the part of time_s during which the core ran no work of its own",
       .report_unit = "s (the profiled core, all train steps)"},
      {.kinds = kT, .path = "/summary/collectives_by_axis/*/bytes_sent", .unit = "bytes",
       .doc = "what the profiled core sent in those collectives (its transfers' bytes), summed over the train steps",
       .report_unit = "bytes (the profiled core, all train steps)"},
      {.kinds = kT, .path = "/summary/dcn_bytes", .unit = "bytes",
       .doc = "multislice: the bytes each core sent over the data-center network to the other slices, summed over the "
              "train steps (the gradients' sums across slices; their time: summary.collectives.dcn); 0 on one slice",
       .report_unit = "bytes (per core, all train steps)"},
      {.kinds = kT, .path = "/summary/host_offload/host_memory_bytes", .unit = "bytes",
       .doc = "activations offloaded to host memory (remat_tensors offload), the most held at once per device; 0: none",
       .report_unit = "bytes (per device)"},
      {.kinds = kT, .path = "/summary/host_offload/host_memory_bytes_per_host", .unit = "bytes",
       .doc = "the same for every device of one host together (the host's RAM holds them)",
       .report_unit = "bytes (per host)"},
      {.kinds = kT, .path = "/summary/logging_syncs/count", .unit = "count",
       .doc = "logging syncs (loss.item() every logging_steps optimizer steps)",
       .report_unit = "count, s (sync + copy; the lost overlap is host time)", .units_key = "summary.logging_syncs",
       .when = "`logging_steps` is set"},
      {.kinds = kT, .path = "/summary/logging_syncs/time_s", .unit = "s", .doc = "their sync and copy time (host time)",
       .report_unit = "count, s (sync + copy; the lost overlap is host time)", .units_key = "summary.logging_syncs",
       .when = "`logging_steps` is set"},
      // Energy and cost (docs/energy.md): null when the chip has no `power:` / `cost:`.
      {.kinds = kT, .path = "/summary/energy/per_step_j", .unit = "J", .doc = "one steady train step of the whole slice: static power over steady_step_time_s + the events of the "
              "steady train program (the train program run most often)",
       .column = "energy_per_step_j", .report_unit = kEnergyJ},
      {.kinds = kT, .path = "/summary/energy/total_j", .unit = "J", .doc = "the whole run, whole slice",
       .column = "energy_total_j", .report_unit = kEnergyJ},
      {.kinds = kT, .path = "/summary/energy/average_power_w_per_chip", .unit = "W",
       .doc = "run energy over run time and chips (total_j / (total_time_s x chips))", .column = "average_power_w_per_chip", .report_unit = "W per chip"},
      {.kinds = kT, .path = "/summary/energy/steady_power_w_per_chip", .unit = "W",
       .doc = "steady step energy over step time and chips (per_step_j / (steady_step_time_s x chips))",
       .column = "steady_power_w_per_chip",
       .report_unit = "W per chip"},
      {.kinds = kT, .path = "/summary/energy/examples_per_j", .unit = "examples/J",
       .doc = "global batch over per-step energy (steady; perf per watt = examples/s per W)", .column = "examples_per_j"},
      {.kinds = kT, .path = "/summary/energy/end_to_end_examples_per_j", .unit = "examples/J",
       .doc = "training examples over run energy"},
      // `*`: static, mxu, vpu, hbm, ici.
      {.kinds = kT, .path = "/summary/energy/per_step_by_component_j/*", .unit = "J",
       .doc = "per_step_j by component: static, mxu, vpu, hbm, ici (they add up to it)", .report_unit = kEnergyJ,
       .units_key = "summary.energy.per_step_by_component_j"},
      {.kinds = kT, .path = "/summary/energy/total_by_component_j/*", .unit = "J", .doc = "total_j by component (as per_step_by_component_j)",
       .report_unit = kEnergyJ, .units_key = "summary.energy.total_by_component_j"},
      {.kinds = kT, .path = "/summary/cost/usd_per_chip_hour", .unit = "USD", .doc = kChipHourPrice,
       .report_unit = "USD per chip-hour"},
      {.kinds = kT, .path = "/summary/cost/usd_total", .unit = "USD", .doc = "run time x chips x usd_per_chip_hour",
       .column = "usd_total"},
      {.kinds = kT, .path = "/summary/cost/usd_per_1k_steps", .unit = "USD", .doc = "1000 steady steps on the slice",
       .column = "usd_per_1k_steps", .report_unit = "USD per 1000 steady steps"},
      {.kinds = kT, .path = "/summary/cost/usd_per_million_tokens", .unit = "USD",
       .doc = "a million training tokens at the steady rate: usd_per_chip_hour / 3600 / steady tokens/s per chip x 10^6",
       .column = "usd_per_million_tokens", .compare = {"time", "USD per million tokens"},
       .report_unit = "USD per million tokens", .when = "steady steps ran"},
  };
}

std::vector<ReportField> kernel_fields() {
  return {
      {.kinds = kK, .path = "/summary/device_cycles", .unit = "cycles",
       .doc = "core clock cycles from launch to the last completion", .column = "device_cycles",
       .compare = {"time", "device cycles"}},
      {.kinds = kK, .path = "/summary/device_time_s", .unit = "s", .doc = "the same in seconds", .column = "device_time_s",
       .compare = {"time", "device time"}},
      {.kinds = kK, .path = "/summary/clock_mhz", .unit = "MHz", .doc = "core clock used for the conversion"},
      {.kinds = kK, .path = "/summary/cores_used", .unit = "count", .doc = "cores running the program"},
      {.kinds = kK, .path = "/summary/flops", .unit = "flop",
       .doc = "useful floating-point operations (2 per multiply-accumulate)", .column = "flops"},
      {.kinds = kK, .path = "/summary/achieved_tflop_per_s", .unit = "TFLOP/s", .doc = "flops / device_time_s",
       .column = "achieved_tflop_per_s", .compare = {"utilization", "achieved TFLOP/s"}, .report_unit = kTflop},
      {.kinds = kK, .path = "/summary/peak_tflop_per_s", .unit = "TFLOP/s",
       .doc = "bf16 MXU peak of the cores used (the compute roof)", .column = "peak_tflop_per_s", .report_unit = kTflop},
      {.kinds = kK, .path = "/summary/mxu_utilization", .unit = "fraction", .doc = "achieved / peak TFLOP/s",
       .column = "mxu_utilization", .compare = {"utilization", "MXU utilization"}},
      {.kinds = kK, .path = "/summary/hbm_bytes", .unit = "bytes", .doc = "bytes the schedule moves between HBM and VMEM",
       .column = "hbm_bytes", .compare = {"memory", "HBM bytes moved"}},
      {.kinds = kK, .path = "/summary/hbm_bytes_min", .unit = "bytes",
       .doc = "compulsory traffic: every input read once, every output written once"},
      {.kinds = kK, .path = "/summary/achieved_hbm_gbyte_per_s", .unit = "GB/s", .doc = "hbm_bytes / device_time_s",
       .column = "achieved_hbm_gbyte_per_s", .compare = {"utilization", "achieved HBM GB/s"}, .report_unit = kGbyte},
      {.kinds = kK, .path = "/summary/peak_hbm_gbyte_per_s", .unit = "GB/s",
       .doc = "HBM peak of the cores used (the bandwidth roof; before the efficiency derate)",
       .column = "peak_hbm_gbyte_per_s", .report_unit = kGbyte},
      {.kinds = kK, .path = "/summary/hbm_bandwidth_utilization", .unit = "fraction", .doc = "achieved / peak GB/s",
       .column = "hbm_bandwidth_utilization", .compare = {"utilization", "HBM bandwidth util."}},
      {.kinds = kK, .unit = "flop/byte", .doc = "arithmetic intensity: flops / hbm_bytes (the roofline's x)",
       .column = "flops_per_byte"},
      {.kinds = kK, .path = "/summary/cmem_bytes", .unit = "bytes",
       .doc = "bytes the schedule moves between CMEM and VMEM (TPU v4; 0 without CMEM)"},
      {.kinds = kK, .path = "/summary/cmem_resident_bytes", .unit = "bytes",
       .doc = "the most bytes the program keeps resident in its chip's CMEM at once",
       .report_unit = "bytes (per chip: the kernel runs alone on its chip)"},
      {.kinds = kK, .path = "/summary/ideal_compute_cycles", .unit = "cycles", .doc = "lower bound: flops at MXU peak"},
      {.kinds = kK, .path = "/summary/ideal_hbm_cycles", .unit = "cycles",
       .doc = "lower bound: compulsory bytes at HBM peak"},
      {.kinds = kK, .path = "/summary/ideal_bound_fraction", .unit = "fraction",
       .doc = "max(ideal bounds) / device_cycles; 1 = at the roofline", .compare = {"utilization", "roofline fraction"}},
      {.kinds = kK, .path = "/summary/fusions", .unit = "count", .doc = "HLO fusions (kernels) in the program"},
      {.kinds = kK, .path = "/summary/instructions", .unit = "count", .doc = "instructions over all core streams"},
      // Energy and cost (docs/energy.md): null when the chip has no `power:` / `cost:`.
      {.kinds = kK, .path = "/summary/energy/total_j", .unit = "J", .doc = "the kernel's chip over the device time (its other cores idle at static power)",
       .column = "energy_total_j", .report_unit = kEnergyJ},
      {.kinds = kK, .path = "/summary/energy/chips", .unit = "count", .doc = "chips the program ran on"},
      {.kinds = kK, .path = "/summary/energy/average_power_w_per_chip", .unit = "W",
       .doc = "energy over device time (the chip's other cores idle)", .column = "average_power_w_per_chip",
       .report_unit = "W per chip"},
      {.kinds = kK, .path = "/summary/energy/all_cores_power_w_per_chip", .unit = "W",
       .doc = "chip power if every core ran the kernel (a data-parallel step of it)", .column = "all_cores_power_w_per_chip",
       .report_unit = "W per chip"},
      {.kinds = kK, .path = "/summary/energy/by_component_j/*", .unit = "J",
       .doc = "total_j by component: static, mxu, vpu, hbm, ici (they add up to it)", .report_unit = kEnergyJ,
       .units_key = "summary.energy.by_component_j"},
      {.kinds = kK, .path = "/summary/cost/usd_per_chip_hour", .unit = "USD", .doc = kChipHourPrice,
       .report_unit = "USD per chip-hour"},
      {.kinds = kK, .path = "/summary/cost/usd_total", .unit = "USD", .doc = "device time x chips x usd_per_chip_hour",
       .column = "usd_total"},
      {.kinds = kK, .path = "/summary/cost/usd_per_1k_steps", .unit = "USD", .doc = "0: a kernel run has no steps",
       .report_unit = "USD per 1000 steady steps"},
  };
}

std::vector<ReportField> hlo_fields() {
  constexpr const char* kBreakdown = "summary.breakdown_s";
  return {
      {.kinds = kH, .path = "/summary/device_time_s", .unit = "s", .doc = "simulated device time of one step of the module",
       .column = "device_time_s", .report_unit = "s (one step)"},
      {.kinds = kH, .path = "/summary/steady_step_time_s", .unit = "s", .doc = "a step after the first: max(host, device)",
       .column = "steady_step_time_s"},
      {.kinds = kH, .path = "/summary/total_time_s", .unit = "s", .doc = "all steps, the first's compile included",
       .column = "total_time_s"},
      {.kinds = kH, .path = "/summary/compiles", .unit = "count", .doc = "1: the module compiles once"},
      {.kinds = kH, .path = "/summary/compile_time_s", .unit = "s", .doc = "the module's XLA compile (first step)",
       .column = "compile_time_s"},
      {.kinds = kH, .path = "/summary/warmup_time_s", .unit = "s", .doc = "start to the end of the first step (compile and first execution)"},
      {.kinds = kH, .path = "/summary/upload_time_s", .unit = "s",
       .doc = "the first execution's parameter upload over the busiest chip's PCIe link"},
      {.kinds = kH, .path = "/summary/mxu_utilization", .unit = "fraction",
       .doc = "flops over device time at the bf16 MXU peak", .column = "mxu_utilization"},
      {.kinds = kH, .path = "/summary/train_steps", .unit = "count", .doc = "steps run"},
      {.kinds = kH, .path = "/summary/breakdown_s/compile", .unit = "s", .doc = "time breakdown: XLA compilation",
       .units_key = kBreakdown},
      {.kinds = kH, .path = "/summary/breakdown_s/warmup", .unit = "s",
       .doc = "time breakdown: program load, parameter upload", .units_key = kBreakdown},
      {.kinds = kH, .path = "/summary/breakdown_s/host", .unit = "s", .doc = "time breakdown: host tracing, dispatch",
       .units_key = kBreakdown},
      {.kinds = kH, .path = "/summary/breakdown_s/device", .unit = "s", .doc = "time breakdown: device compute",
       .units_key = kBreakdown},
      {.kinds = kH, .path = "/summary/breakdown_s/allreduce", .unit = "s",
       .doc = "time breakdown: the module's all-reduces, where they are exposed", .units_key = kBreakdown},
  };
}

std::string escape_cell(std::string s) {
  for (size_t i = s.find('|'); i != std::string::npos; i = s.find('|', i + 2)) s.replace(i, 1, "\\|");
  return s;
}

}  // namespace

const std::vector<ReportField>& report_fields() {
  static const std::vector<ReportField> fields = [] {
    std::vector<ReportField> f = training_fields();
    for (auto part : {kernel_fields(), hlo_fields()}) f.insert(f.end(), part.begin(), part.end());
    return f;
  }();
  return fields;
}

void add_summary_units(nlohmann::json& units, ReportKind kind, const nlohmann::json& report) {
  for (const ReportField& f : report_fields()) {
    if (!f.in(kind) || !*f.path || !*f.unit) continue;
    if (*f.when && !report.contains(nlohmann::json::json_pointer(f.path))) continue;
    units[f.key_in_units()] = f.unit_text();
  }
}

std::string report_fields_markdown() {
  std::string md;
  for (ReportKind k : kReportKinds) {
    md += fmt::format("### `kind: {}`\n\n", report_kind_name(k));
    md += "| Field | Unit | Description | results.csv column | `tpusim compare` row |\n|---|---|---|---|---|\n";
    for (const ReportField& f : report_fields()) {
      if (!f.in(k)) continue;
      std::string doc = f.doc;
      if (*f.when) doc += fmt::format("; present only when {}", f.when);
      const std::string compare =
          *f.compare.name ? fmt::format("{}: {}", f.compare.section, f.compare.name) : std::string();
      md += fmt::format("| {} | {} | {} | {} | {} |\n", *f.path ? fmt::format("`{}`", f.dotted_path()) : "*derived*",
                        escape_cell(f.unit_text()), escape_cell(doc), *f.column ? fmt::format("`{}`", f.column) : "",
                        compare);
    }
    md += "\n";
  }
  return md;
}

}  // namespace tpusim
