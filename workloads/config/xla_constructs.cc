// The registry of XLA-incompatible constructs. A new construct adds one entry to xla_constructs().
//
// kGraphBreakSyncS (xla_constructs.h), 200 µs: a graph break in torch_xla executes the pending graph
// and blocks on its result (`_local_scalar_dense` / a CPU fallback copies the tensor to the host):
// the completion event of the device execution plus the setup of the device->host copy through the
// PJRT client, each on the order of 100 µs on a TPU VM (torch_xla metrics report
// TransferFromDeviceTime samples of ~0.1-0.3 ms for scalars). The bytes themselves are charged
// separately over PCIe (host_costs.h pcie_transfer_s).
#include "workloads/config/xla_constructs.h"

#include <fmt/format.h>

#include "base/config_error.h"
#include "config/suggest.h"

namespace tpusim {

const std::vector<XlaConstruct>& xla_constructs() {
  static const std::vector<XlaConstruct> k = [] {
    std::vector<XlaConstruct> v;
    {
      XlaConstruct c;
      c.name = "boolean_mask_indexing";
      c.code = "x[mask]";
      c.rule = "data-dependent shape";
      c.why = "the result's size depends on the mask's values: the graph breaks and indexing falls back to the CPU";
      c.rewrite = "keep the shape static: multiply by the mask (x * mask) or torch.where(mask, x, 0)";
      c.aten_op = "aten::nonzero";  // a bool index is converted to indices by nonzero
      c.host_bytes_per_token = 1;   // the bool mask, B x S
      v.push_back(c);
    }
    {
      XlaConstruct c;
      c.name = "nonzero";
      c.code = "torch.nonzero(x)";
      c.rule = "data-dependent shape";
      c.why = "the number of indices depends on the values: the graph breaks and nonzero runs on the CPU";
      c.rewrite = "pad to a fixed size (torch.nonzero(x, size=N) style / a static max) or use torch.where";
      c.aten_op = "aten::nonzero";
      c.host_bytes_per_token = 4;   // the f32/int32 input, B x S
      v.push_back(c);
    }
    {
      XlaConstruct c;
      c.name = "item_in_loop";
      c.code = "loss.item()";
      c.rule = "device->host sync every step";
      c.why = "reading a tensor's value in the step executes the pending graph and copies it to the host";
      c.rewrite = "log every N steps, or xm.add_step_closure(log_fn, args=(loss,)) so it runs after mark_step";
      c.aten_op = "aten::_local_scalar_dense";
      c.host_bytes_fixed = 4;
      v.push_back(c);
    }
    {
      XlaConstruct c;
      c.name = "data_dependent_if";
      c.code = "if tensor > 0:";
      c.rule = "data-dependent control flow";
      c.why = "Python needs the condition's value: the graph breaks and the tensor is copied to the host";
      c.rewrite = "compute both branches and select: torch.where(cond, a, b)";
      c.aten_op = "aten::_local_scalar_dense";
      c.host_bytes_fixed = 1;
      v.push_back(c);
    }
    {
      XlaConstruct c;
      c.name = "dynamic_sequence_length";
      c.code = "tokenizer(batch) without padding";
      c.rule = "one compile per distinct input shape";
      c.why = "every batch has a new sequence length, hence a new graph and a new compile";
      c.rewrite = "pad to max_length, or bucket with pad_to_multiple_of (padding: multiple_of:N)";
      c.graph_break = false;
      v.push_back(c);
    }
    return v;
  }();
  return k;
}

std::vector<std::string> xla_construct_names() {
  std::vector<std::string> n;
  for (const auto& c : xla_constructs()) n.push_back(c.name);
  return n;
}

const XlaConstruct& find_xla_construct(const std::string& name) {
  for (const auto& c : xla_constructs())
    if (c.name == name) return c;
  throw ConfigError({"", "model_code", 0, name, "unknown construct; known: " + config::join(xla_construct_names()),
                     config::suggest(name, xla_construct_names(), "known")});
}

std::string xla_construct_message(const XlaConstruct& c) {
  return fmt::format("XLA: {} in `{}` ({}): {}; rewrite: {}", c.rule, c.code, c.name, c.why, c.rewrite);
}

}  // namespace tpusim
