#include "compiler/hlo/hlo_import_attention.h"

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_import_ops.h"

namespace tpusim::hlo::import_ops {

std::optional<std::vector<int>> flash_attention(const Module& m, const Instruction& in, models::Graph& g,
                                                const std::vector<int>& ops) {
  const std::optional<std::string> config = string_attr(m, in, "backend_config");
  if (!config) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*config, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tpusim_attention")) return std::nullopt;
  models::AttentionAttrs a;
  try {
    const nlohmann::json& t = j.at("tpusim_attention");
    a.causal = t.value("causal", a.causal);
    a.window = t.value("window", a.window);
    a.block_q = t.value("block_q", a.block_q);
    a.block_kv = t.value("block_kv", a.block_kv);
    a.scale = t.value("scale", a.scale);
    a.q_offset = t.value("q_offset", a.q_offset);
  } catch (const nlohmann::json::exception& e) {
    shape_error(m, in, *config, std::string("is not a flash attention call's attributes (") + e.what() + ")");
  }
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i] < 0) shape_error(m, in, in.operand_names[i], "a flash attention operand is an array");
  const bool backward = ops.size() == 6;
  if (!backward && ops.size() != 3)
    shape_error(m, in, std::to_string(ops.size()) + " operands",
                "a flash attention call takes q, k, v (forward) or q, k, v, out, lse, d_out (backward)");
  try {
    if (backward) {
      const models::Graph::AttentionGrads d = g.attention_grad(ops[0], ops[1], ops[2], ops[3], ops[4], ops[5], a, in.name);
      return std::vector<int>{d.dq, d.dk, d.dv};
    }
    const models::Graph::AttentionValues f = g.attention(ops[0], ops[1], ops[2], a, in.name);
    return std::vector<int>{f.out, f.lse};
  } catch (const std::invalid_argument& e) {
    shape_error(m, in, in.shape.to_string(), std::string("flash attention: ") + e.what());
  }
}

}  // namespace tpusim::hlo::import_ops
