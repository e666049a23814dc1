// The hardware schema: one declaration per parameter struct of sim/, mirroring its nesting.
// Ranges are sanity bounds (catch typos and unit mix-ups such as MHz vs GHz), not design limits.
#include "config/hw_schema.h"

#include <fmt/format.h>

namespace tpusim {

using config::CheckContext;
using config::Schema;

namespace {

constexpr const char* kNorrie = "Norrie et al., IEEE Micro 2021 (TPUv2/v3)";
// Fitted to data/tpu_v3_core_calibration.csv; the shipped values may change when recalibrated.
constexpr const char* kCalibrated = "calibrated, see docs/calibration.md";

const Schema<SequencerParams>& sequencer_schema() {
  static const Schema<SequencerParams> s = [] {
    Schema<SequencerParams> s("Sequencer", "The TensorCore's scalar unit that fetches and issues the program's VLIW bundles.");
    s.field(&SequencerParams::launch_cycles, "launch_cycles")
        .unit("cycles")
        .range(0, 1e8)
        .doc("fixed cost of one program: host doorbell to first instruction, plus the completion signal")
        .source(kCalibrated);
    return s;
  }();
  return s;
}

const Schema<MxuParams>& mxu_schema() {
  static const Schema<MxuParams> s = [] {
    Schema<MxuParams> s("MXU (matrix unit)",
                        "A weight-stationary systolic array: a weight tile (rows × cols) is loaded into the array, "
                        "then LHS rows stream through it, one per cycle, producing one output row of `cols` values "
                        "per cycle. bf16 multiplies, fp32 accumulation.");
    s.field(&MxuParams::count, "count").range(1, 16).doc("MXUs per TensorCore (v2: 1, v3: 2, v4, v5e, v5p, v6e: 4)").source(kNorrie);
    s.field(&MxuParams::rows, "rows").range(1, 4096).doc("array rows = contraction depth of one weight tile");
    s.field(&MxuParams::cols, "cols").range(1, 4096).doc("array columns = output columns of one weight tile");
    s.field(&MxuParams::weight_buffers, "weight_buffers")
        .range(1, 8)
        .doc("weight tiles held at once (2 = double buffered: the next tile loads while one computes)");
    s.field(&MxuParams::weight_load_rows_per_cycle, "weight_load_rows_per_cycle")
        .unit("rows/cycle")
        .range(1, 4096)
        .doc("weight rows shifted into the array per cycle")
        .source(kCalibrated);
    s.field(&MxuParams::lhs_rows_per_cycle, "lhs_rows_per_cycle")
        .unit("rows/cycle")
        .range(1, 64)
        .doc("LHS rows entering the array per cycle (1 for a systolic array)");
    s.field(&MxuParams::int8_rate, "int8_rate").range(0, 4).default_value(0, "no int8")
        .doc("int8 matmuls (quantization: int8): rows streamed per bf16 row slot, i.e. the int8 peak over the bf16 "
             "peak (2 on v5e, v5p, v6e; 1 on v4); 0: the chip has no int8 matmul")
        .source("Cloud TPU v4/v5e/v5p/v6e documentation: peak int8 TOP/s vs bf16 TFLOP/s");
    s.field(&MxuParams::fp8_rate, "fp8_rate").range(0, 4).default_value(0, "no fp8")
        .doc("fp8 matmuls (quantization: fp8): as int8_rate (2 on v6e); 0: the chip has no fp8 matmul")
        .source("Cloud TPU v6e documentation (fp8 listed beside int8)");
    s.check([](const MxuParams& m, const CheckContext& c) {
      if (m.weight_load_rows_per_cycle > m.rows)
        c.fail("weight_load_rows_per_cycle", fmt::format("must be <= rows ({})", m.rows));
    });
    return s;
  }();
  return s;
}

const Schema<VpuParams>& vpu_schema() {
  static const Schema<VpuParams> s = [] {
    Schema<VpuParams> s("VPU (vector unit)",
                        "The vector unit: vector registers of sublanes × lanes 32-bit values, element-wise ALUs, a "
                        "transcendental unit (EUP: exp, rsqrt, ...) and a cross-lane unit (XLU: reductions, transposes).");
    s.field(&VpuParams::sublanes, "sublanes").range(1, 1024).doc("rows of a vector register").source(kNorrie);
    s.field(&VpuParams::lanes, "lanes").range(1, 4096).doc("columns of a vector register").source(kNorrie);
    s.field(&VpuParams::alu_slots, "alu_slots").range(1, 16).doc("vector ALU operations issued per cycle");
    s.field(&VpuParams::vld_slots, "vld_slots").range(1, 16).doc("VMEM → vector register loads issued per cycle");
    s.field(&VpuParams::vst_slots, "vst_slots").range(1, 16).doc("vector register → VMEM stores issued per cycle");
    s.field(&VpuParams::eup_cycles_per_vreg, "eup_cycles_per_vreg")
        .unit("cycles")
        .range(1, 4096)
        .doc("transcendental unit throughput: cycles per vector register")
        .source(kCalibrated);
    s.field(&VpuParams::xlu_cycles_per_vreg, "xlu_cycles_per_vreg")
        .unit("cycles")
        .range(1, 4096)
        .doc("cross-lane unit throughput (reduce, transpose, permute): cycles per vector register")
        .source(kCalibrated);
    s.field(&VpuParams::pipeline_latency_cycles, "pipeline_latency_cycles")
        .unit("cycles")
        .range(0, 1e6)
        .doc("from issue of a vector block to its last result")
        .source(kCalibrated);
    return s;
  }();
  return s;
}

const Schema<VmemParams>& vmem_schema() {
  static const Schema<VmemParams> s = [] {
    Schema<VmemParams> s("VMEM", "The TensorCore's software-managed vector memory (scratchpad) between HBM and the VPU/MXUs.");
    s.field(&VmemParams::size_mib, "size_mib").unit("MiB").range(1, 1 << 20).doc("capacity per TensorCore");
    return s;
  }();
  return s;
}

const Schema<DmaParams>& dma_schema() {
  static const Schema<DmaParams> s = [] {
    Schema<DmaParams> s("DMA engines", "Copy data between HBM and VMEM, cut into chunks spread over the HBM channels.");
    s.field(&DmaParams::engines, "engines").range(1, 1024).doc("transfers in flight at once per TensorCore");
    s.field(&DmaParams::setup_cycles, "setup_cycles")
        .unit("cycles")
        .range(0, 1e7)
        .doc("descriptor issue to first request, per transfer")
        .source(kCalibrated);
    s.field(&DmaParams::chunk_bytes, "chunk_bytes")
        .unit("bytes")
        .range(32, 1 << 30)
        .doc("a transfer is cut into requests of this size");
    return s;
  }();
  return s;
}

const Schema<XferParams>& xfer_schema() {
  static const Schema<XferParams> s = [] {
    Schema<XferParams> s("Transfer unit",
                         "The TensorCore's transfer queue: sends to other cores (ICI, NoC), issued in stream order onto "
                         "the first free channel; a channel carries one transfer from its start until its last byte has "
                         "left the source. An asynchronous collective's sends have an in-order queue of their own on the same "
                         "channels (sim/README.md, \"Background queues\"). Host loads and stores (PCIe) have a queue of "
                         "their own with two channels, one per PCIe direction, beside these.");
    s.field(&XferParams::channels, "channels")
        .range(1, 64)
        .default_value(1)
        .doc("sends in flight at once per TensorCore (concurrent ICI DMA streams); 1 = one at a time")
        .source("assumption (no public figure): the shipped chips have one per ICI port of the chip plus one for the "
                "NoC, so that a core can drive all of its chip's links at once");
    return s;
  }();
  return s;
}

const Schema<CoreParams>& core_schema() {
  static const Schema<CoreParams> s = [] {
    Schema<CoreParams> s("TensorCore", "One TensorCore; every core of a chip is identical (declared once, replicated `cores` times).");
    s.field(&CoreParams::clock_mhz, "clock_mhz").unit("MHz").min(1).max(1e4).doc("core clock").source(kNorrie);
    s.section(&CoreParams::sequencer, "sequencer", sequencer_schema());
    s.section(&CoreParams::mxu, "mxu", mxu_schema());
    s.section(&CoreParams::vpu, "vpu", vpu_schema());
    s.section(&CoreParams::vmem, "vmem", vmem_schema());
    s.section(&CoreParams::dma, "dma", dma_schema());
    s.section(&CoreParams::xfer, "xfer", xfer_schema());
    return s;
  }();
  return s;
}

const Schema<HbmParams>& hbm_schema() {
  static const Schema<HbmParams> s = [] {
    Schema<HbmParams> s("HBM", "The chip's high-bandwidth memory: capacity, peak bandwidth, channels and latency.");
    s.field(&HbmParams::impl, "impl")
        .one_of({"simple"})
        .doc("model variant: simple = bandwidth and latency per channel, no bank timing");
    s.field(&HbmParams::size_gib, "size_gib").unit("GiB").range(1, 1 << 20).doc("capacity per chip");
    s.field(&HbmParams::bandwidth_gbyte_per_s, "bandwidth_gbyte_per_s")
        .unit("GB/s")
        .greater_than(0)
        .max(1e6)
        .doc("peak bandwidth per chip (10^9 bytes/s)");
    s.field(&HbmParams::efficiency, "efficiency")
        .greater_than(0)
        .max(1)
        .doc("achievable fraction of peak for streaming DMA (refresh, bus turnarounds)")
        .source(kCalibrated);
    s.field(&HbmParams::channels, "channels").range(1, 4096).doc("independent channels per chip");
    s.field(&HbmParams::latency_ns, "latency_ns").unit("ns").range(0, 1e6).doc("request to first data").source(kCalibrated);
    s.field(&HbmParams::ownership, "ownership")
        .doc("per_core: each core owns 1/cores of size, bandwidth and channels (v2/v3); shared: all cores share it (v4)");
    return s;
  }();
  return s;
}

constexpr const char* kJouppiV4 = "Jouppi et al., ISCA 2023 (TPU v4)";

const Schema<CmemParams>& cmem_schema() {
  static const Schema<CmemParams> s = [] {
    Schema<CmemParams> s("CMEM", "TPU v4's on-chip memory between HBM and the cores' VMEMs, shared by the chip's "
                                 "TensorCores. The compiler keeps the buffers that fit there and DMAs read and write "
                                 "them at its bandwidth instead of HBM's. Absent on v2/v3 (no CMEM).");
    s.field(&CmemParams::size_mib, "size_mib")
        .unit("MiB")
        .range(0, 1 << 20)
        .doc("capacity per chip (v4: 128); 0 disables it, as if absent")
        .source(kJouppiV4);
    s.field(&CmemParams::bandwidth_gbyte_per_s, "bandwidth_gbyte_per_s")
        .unit("GB/s")
        .greater_than(0)
        .max(1e6)
        .doc("peak bandwidth per chip (10^9 bytes/s), shared by its cores (assumption: no published figure)");
    s.field(&CmemParams::latency_ns, "latency_ns")
        .unit("ns")
        .range(0, 1e6)
        .doc("request to first data (assumption: no published figure)");
    return s;
  }();
  return s;
}

const Schema<IciParams>& ici_schema() {
  static const Schema<IciParams> s = [] {
    Schema<IciParams> s("ICI (inter-chip interconnect)", "The chip's links to its neighbours in the slice's mesh or torus.");
    s.field(&IciParams::links, "links").range(0, 64).doc("ICI ports per chip");
    s.field(&IciParams::bandwidth_gbyte_per_s_per_direction, "bandwidth_gbyte_per_s_per_direction")
        .unit("GB/s")
        .greater_than(0)
        .max(1e5)
        .doc("per link, one direction");
    s.field(&IciParams::hop_latency_ns, "hop_latency_ns").unit("ns").range(0, 1e7).doc("per router hop");
    s.field(&IciParams::packet_bytes, "packet_bytes")
        .unit("bytes")
        .range(16, 1 << 24)
        .doc("network packet: links, the NoC and PCIe are reserved packet by packet, so flows sharing them interleave "
             "at this granularity");
    return s;
  }();
  return s;
}

const Schema<NocParams>& noc_schema() {
  static const Schema<NocParams> s = [] {
    Schema<NocParams> s("NoC (on-chip network)", "The path between the TensorCores of one chip (core-to-core transfers on the same chip).");
    s.field(&NocParams::bandwidth_gbyte_per_s, "bandwidth_gbyte_per_s")
        .unit("GB/s")
        .greater_than(0)
        .max(1e6)
        .doc("shared by all core-to-core transfers of the chip (10^9 bytes/s)");
    s.field(&NocParams::latency_ns, "latency_ns").unit("ns").range(0, 1e7).doc("source core to destination core");
    return s;
  }();
  return s;
}

const Schema<PcieParams>& pcie_schema() {
  static const Schema<PcieParams> s = [] {
    Schema<PcieParams> s("PCIe", "The link between the host and one chip (infeed, outfeed, parameter upload).");
    s.field(&PcieParams::bandwidth_gbyte_per_s, "bandwidth_gbyte_per_s").unit("GB/s").greater_than(0).max(1e4).doc("one direction");
    s.field(&PcieParams::latency_ns, "latency_ns").unit("ns").range(0, 1e8).doc("per transfer");
    return s;
  }();
  return s;
}

const Schema<DcnParams>& dcn_schema() {
  static const Schema<DcnParams> s = [] {
    Schema<DcnParams> s("Data-center network (DCN)",
                        "The network that joins the slices of a multislice run (Cloud TPU Multislice): the chip's share of "
                        "its host's network interfaces. DCN traffic crosses PCIe to the host, the host's NICs, the "
                        "network, and the other slice's host and PCIe. Absent: the chip's slices cannot be joined.");
    s.field(&DcnParams::bandwidth_gbyte_per_s, "bandwidth_gbyte_per_s")
        .unit("GB/s")
        .greater_than(0)
        .max(1e4)
        .doc("per chip, one direction: the host's NIC bandwidth divided by its chips (10^9 bytes/s)");
    s.field(&DcnParams::latency_us, "latency_us").unit("µs").range(0, 1e6).doc("host to host, one way, the hosts' network stacks included");
    return s;
  }();
  return s;
}

const Schema<MultisliceParams>& multislice_schema() {
  static const Schema<MultisliceParams> s = [] {
    Schema<MultisliceParams> s("Multislice",
                               "Several identical slices joined by the data-center network (Cloud TPU Multislice). The "
                               "simulator runs one slice: the slices run the same program, and what crosses the DCN is "
                               "timed per chip (chip.dcn).");
    s.field(&MultisliceParams::slices, "slices")
        .range(1, 1024)
        .default_value(1)
        .doc("slices of this shape joined by the DCN (1: one slice); also `--set multislice.slices=N`. Training "
             "workloads run across them (data parallelism across slices); a kernel or an imported HLO module runs on "
             "one slice");
    return s;
  }();
  return s;
}

// docs/energy.md derives every value of the shipped chips; "calibrated" ones are fitted to the
// published chip power (docs/calibration.md, "Energy").
const Schema<PowerParams>& power_schema() {
  static const Schema<PowerParams> s = [] {
    Schema<PowerParams> s("Power",
                          "The chip's power model: static power plus energy per counted event (docs/energy.md). "
                          "Energy = static_w × time × chips + Σ events × pJ/event. Absent: runs report no energy.");
    s.field(&PowerParams::static_w, "static_w")
        .unit("W")
        .min(0)
        .max(2000)
        .doc("per chip, drawn whenever the slice is up (idle, compiling or computing): leakage, clock tree, HBM "
             "refresh, host interface")
        .source("calibrated to the published minimum chip power, see docs/calibration.md");
    s.field(&PowerParams::mxu_pj_per_flop, "mxu_pj_per_flop")
        .unit("pJ/flop")
        .min(0)
        .max(1000)
        .doc("per MXU flop (2 per multiply-accumulate), including operand and partial-sum movement in the array "
             "and the VMEM reads that feed it")
        .source("calibrated to the published maximum chip power on a compute-bound matmul, see docs/calibration.md");
    s.field(&PowerParams::vpu_pj_per_vreg_op, "vpu_pj_per_vreg_op")
        .unit("pJ")
        .min(0)
        .max(1e6)
        .doc("per vector-register operation of the VPU (sublanes × lanes 32-bit elements; ALU, EUP, XLU, VMEM "
             "load or store)")
        .source("Horowitz, ISSCC 2014 (fp32 op and register-file energy), scaled to the node; docs/energy.md");
    s.field(&PowerParams::hbm_pj_per_byte, "hbm_pj_per_byte")
        .unit("pJ/byte")
        .min(0)
        .max(1e4)
        .doc("per byte moved between HBM and VMEM (DRAM core, I/O and the PHY)")
        .source("HBM2 ≈ 3.9 pJ/bit: O'Connor et al., MICRO 2017; docs/energy.md");
    s.field(&PowerParams::ici_pj_per_byte, "ici_pj_per_byte")
        .unit("pJ/byte")
        .min(0)
        .max(1e4)
        .doc("per byte a core sends over ICI to another chip (SerDes, router)")
        .source("assumption: long-reach electrical SerDes, ≈ 5 pJ/bit; docs/energy.md");
    return s;
  }();
  return s;
}

const Schema<CostParams>& cost_schema() {
  static const Schema<CostParams> s = [] {
    Schema<CostParams> s("Cost", "The price of the hardware, editable (e.g. --set chip.cost.usd_per_chip_hour=1.35 for a "
                                 "committed-use price). Absent: runs report no cost.");
    s.field(&CostParams::usd_per_chip_hour, "usd_per_chip_hour")
        .unit("USD")
        .min(0)
        .max(1e4)
        .doc("price of one chip for one hour; a run costs its simulated wall time × chips × this")
        .source("Google Cloud TPU pricing page, on-demand list price (varies by region and commitment); "
                "docs/energy.md");
    return s;
  }();
  return s;
}

const Schema<TopologyParams>& topology_schema() {
  static const Schema<TopologyParams> s = [] {
    Schema<TopologyParams> s("Topology", "How the slice's chips are joined by ICI: a mesh, or a torus where wraparound is set.");
    s.field(&TopologyParams::dims, "dims").size(1, 3).range(1, 1024).doc("chips per dimension, e.g. [2, 2] for v3-8, [4, 4] for v3-32");
    s.field(&TopologyParams::wraparound, "wraparound")
        .size(1, 3)
        .doc("per dimension: true if links close the ring (torus), false for a mesh");
    s.check([](const TopologyParams& t, const CheckContext& c) {
      if (t.wraparound.size() != t.dims.size())
        c.fail("wraparound", fmt::format("must have one entry per dimension of dims ({})", t.dims.size()));
    });
    return s;
  }();
  return s;
}

const Schema<SliceParams>& slice_schema() {
  static const Schema<SliceParams> s = [] {
    Schema<SliceParams> s("Slice", "The chips joined by ICI and the hosts that drive them.");
    s.section(&SliceParams::topology, "topology", topology_schema());
    s.field(&SliceParams::hosts, "hosts").range(1, 1 << 16).doc("host machines");
    s.field(&SliceParams::chips_per_host, "chips_per_host").range(1, 64).doc("chips attached to each host over PCIe");
    s.check([](const SliceParams& sl, const CheckContext& c) {
      // The largest slice joined by ICI is a TPU v5p pod, 8,960 chips (Google Cloud TPU v5p
      // documentation); twice that leaves room for designs and keeps every run's memory bounded.
      constexpr uint64_t kMaxChips = 16384;
      if (sl.chips() > kMaxChips)
        c.fail("topology.dims", fmt::format("makes {} chips; a slice has at most {} (the largest built, a TPU v5p pod, "
                                            "has 8,960)", sl.chips(), kMaxChips));
      const uint64_t hosted = uint64_t(sl.hosts) * sl.chips_per_host;
      if (hosted != sl.chips())
        c.fail("hosts", fmt::format("hosts × chips_per_host = {} × {} = {} must equal the chips of topology.dims ({})",
                                    sl.hosts, sl.chips_per_host, hosted, sl.chips()));
    });
    return s;
  }();
  return s;
}

const Schema<HostParams>& host_schema() {
  static const Schema<HostParams> s = [] {
    Schema<HostParams> s("Host", "One host machine (all hosts of a slice are identical): runs the framework, tracing and XLA compilation.");
    s.field(&HostParams::cpus, "cpus").range(1, 1 << 16).doc("CPU cores (vCPUs)");
    s.field(&HostParams::ram_gib, "ram_gib").unit("GiB").range(1, 1 << 24).doc("RAM");
    s.field(&HostParams::cpu_ghz, "cpu_ghz").unit("GHz").greater_than(0).max(10).doc("CPU clock (compile and tracing costs scale by it)");
    // The training driver's host cost models (workloads/loop/host_costs.cc derives the defaults from
    // the published figures of docs/hardware.md; the shipped YAMLs repeat them with the source).
    s.field(&HostParams::reference_cpu_ghz, "reference_cpu_ghz").unit("GHz").greater_than(0).max(10).default_value(2.0)
        .doc("host clock at which the cost coefficients below hold; times scale by reference_cpu_ghz / cpu_ghz");
    s.field(&HostParams::trace_s_per_node, "trace_s_per_node").unit("s").min(0).max(1).default_value(1.9e-5)
        .doc("lazy-tensor tracing cost per recorded graph node")
        .source("docs/sources.md: BERT-base forward ≈ 25 ms of tracing, independent of batch size");
    s.field(&HostParams::step_overhead_s, "step_overhead_s").unit("s").min(0).max(10).default_value(0.005)
        .doc("Python and framework dispatch per step (data loader, zero_grad, the training loop)");
    s.field(&HostParams::compile_base_s, "compile_base_s").unit("s").min(0).max(3600).default_value(0.3)
        .doc("fixed cost of one XLA compilation").source("docs/sources.md: small graphs ≈ 0.4 s");
    s.field(&HostParams::compile_s_per_hlo_op, "compile_s_per_hlo_op").unit("s").min(0).max(10).default_value(3.0e-4)
        .doc("compile cost per HLO op of the step graph").source("docs/sources.md: ~10^5 IR nodes take several minutes");
    s.field(&HostParams::compile_s_per_kernel, "compile_s_per_kernel").unit("s").min(0).max(10).default_value(5.0e-3)
        .doc("compile cost per fused kernel (code generation)")
        .source("docs/sources.md: a Transformers fine-tune, 5 compiles in 28.9 s");
    s.field(&HostParams::program_load_s, "program_load_s").unit("s").min(0).max(600).default_value(0.05)
        .doc("first execution of a new program: loading the executable, allocating its HBM buffers");
    s.field(&HostParams::process_ram_gib, "process_ram_gib").unit("GiB").min(0).max(1 << 20).default_value(0.5)
        .doc("private RAM of one framework process, model excluded (forked workers share the parent's pages)");
    s.field(&HostParams::remote_input_gbyte_per_s, "remote_input_gbyte_per_s").unit("GB/s").greater_than(0).max(1000)
        .default_value(2.0)
        .doc("TPU Node (workload tpu_runtime: node): network bandwidth from the user's VM to the TPU host")
        .source("Google Compute Engine docs: 16 Gbit/s egress of an 8-vCPU VM = 2 GB/s");
    s.field(&HostParams::remote_input_latency_s, "remote_input_latency_s").unit("s").min(0).max(10).default_value(0.001)
        .doc("TPU Node: per-batch round trip of the input RPC (assumption: ~1 ms within a zone)");
    return s;
  }();
  return s;
}

}  // namespace

const Schema<ChipParams>& chip_schema() {
  static const Schema<ChipParams> s = [] {
    Schema<ChipParams> s("TPU chip", "One TPU chip: its TensorCores, HBM, CMEM (v4), on-chip network (unused with one core), ICI ports and PCIe host interface.");
    s.field(&ChipParams::generation, "generation").one_of({"v2", "v3", "v4", "v5e", "v5p", "v6e"}).doc("TPU generation");
    s.field(&ChipParams::cores, "cores").range(1, 64).doc("TensorCores per chip").source(kNorrie);
    s.field(&ChipParams::megacore, "megacore")
        .default_value(false)
        .doc("the chip's cores are one device (TPU v4 and v5p megacore): frameworks see one device per chip "
             "(per_device_batch_size is per chip), XLA splits each program over the cores (each computes "
             "half of the batch and updates half of the parameters), and parameters, gradients and optimizer "
             "state are stored once in the shared HBM. false: every core is a device with its own share of "
             "HBM (v2/v3; v5e/v6e have one core per chip, owning all of it). Needs hbm.ownership: shared and at "
             "least 2 cores")
        .source("Google Cloud TPU v4 documentation (\"megacore\"); Austin et al., \"How to Think About TPUs\"");
    s.section(&ChipParams::core, "core", core_schema());
    s.section(&ChipParams::hbm, "hbm", hbm_schema());
    s.optional_section(&ChipParams::cmem, "cmem", cmem_schema());
    s.section(&ChipParams::noc, "noc", noc_schema());
    s.section(&ChipParams::ici, "ici", ici_schema());
    s.section(&ChipParams::pcie, "pcie", pcie_schema());
    s.optional_section(&ChipParams::dcn, "dcn", dcn_schema());
    s.optional_section(&ChipParams::power, "power", power_schema());
    s.optional_section(&ChipParams::cost, "cost", cost_schema());
    s.check([](const ChipParams& c, const CheckContext& ctx) {
      if (c.hbm.ownership == HbmOwnership::kPerCore && c.hbm.channels % c.cores != 0)
        ctx.fail("hbm.channels", fmt::format("must be divisible by cores ({}) when hbm.ownership is per_core", c.cores),
                 "each core owns channels / cores channels");
      if (c.megacore && c.hbm.ownership != HbmOwnership::kShared)
        ctx.fail("megacore", fmt::format("needs hbm.ownership: shared (is {})", enum_name(c.hbm.ownership)),
                 "the cores of a megacore share the chip's HBM: set hbm.ownership: shared, or megacore: false");
      if (c.megacore && c.cores < 2)
        ctx.fail("megacore", fmt::format("needs at least 2 cores (cores is {})", c.cores),
                 "a megacore joins the chip's TensorCores into one device");
    });
    return s;
  }();
  return s;
}

const Schema<HwConfig>& hw_schema() {
  static const Schema<HwConfig> s = [] {
    Schema<HwConfig> s("Hardware config", "A slice of TPU chips and its hosts.");
    s.field(&HwConfig::name, "name").default_value("", "file stem").doc("config name, shown in reports");
    s.section(&HwConfig::chip, "chip", chip_schema());
    s.section(&HwConfig::slice, "slice", slice_schema());
    s.section(&HwConfig::host, "host", host_schema());
    s.section(&HwConfig::multislice, "multislice", multislice_schema());
    s.check([](const HwConfig& hw, const CheckContext& c) {
      if (hw.multislice.slices > 1 && !hw.chip.dcn)
        c.fail("multislice.slices",
               fmt::format("is {}, but chip generation {} has no chip.dcn section (the network joining slices)",
                           hw.multislice.slices, hw.chip.generation),
               "run one slice, or give chip.dcn: {bandwidth_gbyte_per_s, latency_us} (Cloud TPU Multislice: v5e, "
               "v5p, v6e)");
      uint32_t used = 0;  // a dimension longer than 1 needs at least one ICI port per chip
      for (uint32_t d : hw.slice.topology.dims) used += d > 1;
      if (hw.chip.ici.links < used)
        c.fail("chip.ici.links", fmt::format("must be >= {}, the topology dimensions longer than 1 (slice.topology.dims)", used));
    });
    return s;
  }();
  return s;
}

}  // namespace tpusim
