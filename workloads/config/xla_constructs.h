// Python-level constructs of a user's training step that break XLA's rules (docs/sources.md, last
// bullet: no data-dependent control flow, no data-dependent shapes, one compile per input shape),
// named in a training workload's `model_code:` list. One declaration per construct in
// xla_constructs.cc; the training driver charges their cost (docs/training.md "XLA rules").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tpusim {

struct XlaConstruct {
  std::string name;      // the `model_code:` entry
  std::string code;      // what it looks like in the user's step, e.g. "x[mask]"
  std::string rule;      // the XLA rule it breaks
  std::string why;       // what PyTorch/XLA does with it
  std::string rewrite;   // the standard rewrite
  // How the driver models it under torch_xla: a graph break with a CPU fallback (`aten_op` counted
  // in metrics) and a device->host copy of a tensor of host_bytes_fixed + host_bytes_per_token x B x S
  // bytes per core; or (graph_break false) a new input shape every batch (padding becomes `longest`).
  bool graph_break = true;
  std::string aten_op;   // torch_xla's counter name, e.g. "aten::nonzero"
  uint64_t host_bytes_fixed = 0, host_bytes_per_token = 0;
};

const std::vector<XlaConstruct>& xla_constructs();
std::vector<std::string> xla_construct_names();
const XlaConstruct& find_xla_construct(const std::string& name);  // throws ConfigError, did-you-mean

// Under torch_xla, per graph break and train step (constants derived in xla_constructs.cc):
// the host waits for the device to finish the graph before the break (the host/device overlap of
// the step is lost), then pays kGraphBreakSyncS plus the PCIe copy of the tensor plus the dispatch
// of the second graph (host step_overhead_s); the second graph is one more compile per program.
inline constexpr double kGraphBreakSyncS = 200e-6;

// The message of the real XLA/torch_xla failure with strict_xla: true, and the warning otherwise.
std::string xla_construct_message(const XlaConstruct& c);

}  // namespace tpusim
