#include "compiler/hlo/hlo_validate.h"

#include <algorithm>
#include <array>

#include "compiler/hlo/hlo_error.h"
#include "compiler/hlo/hlo_scanner.h"

namespace tpusim::hlo {
namespace {

SourcePos pos_of(const Module& m, int line, int column, const std::string& instruction) {
  return {&m.file, line, column, instruction};
}

// A name list of a computation-valued attribute: `%add` or `{%a, %b}`. Each name with its column.
std::vector<std::pair<std::string, SourcePos>> names_in(const Module& m, const Attribute& a, const std::string& inst) {
  std::vector<std::pair<std::string, SourcePos>> r;
  Scanner v(a.value, &m.file, a.line, a.column);
  v.instruction = inst;
  const bool list = v.accept('{');
  if (!(list && v.accept('}'))) {
    do {
      v.skip_space();
      SourcePos p = v.here();
      r.emplace_back(v.name("a name"), std::move(p));
    } while (list && v.accept(','));
    if (list) v.expect('}', "',' or '}' in the list of names");
  }
  v.skip_space();
  if (!v.eof()) v.fail("follows the name; expected one name or {NAME, ...} as the value of " + a.name);
  return r;
}

void validate_computation(Module& m, Computation& c, int ci) {
  // Operands and control predecessors: defined earlier (index below the user's).
  for (int i = 0; i < int(c.instructions.size()); ++i) {
    Instruction& in = c.instructions[i];
    auto resolve = [&](const std::string& name, const SourcePos& at, const char* role) {
      auto it = c.index.find(name);
      if (it == c.index.end())
        throw_hlo_error(at, name, std::string("is not defined in computation '") + c.name + "'; expected the " + role + " to name an instruction defined above");
      if (it->second >= i)
        throw_hlo_error(at, name, std::string("is defined ") + (it->second == i ? "by this instruction itself" : "at line " + std::to_string(c.instructions[it->second].line) + ", after its use") + "; expected the " + role + " to be defined above (HLO is in SSA form)");
      return it->second;
    };
    in.operands.clear();
    for (size_t k = 0; k < in.operand_names.size(); ++k) {
      const auto [line, column] = in.operand_positions[k];
      in.operands.push_back(resolve(in.operand_names[k], pos_of(m, line, column, in.name), "operand"));
    }
    for (const Attribute& a : in.attrs) {
      if (a.name == "control-predecessors") {
        for (const auto& [n, p] : names_in(m, a, in.name)) in.control_predecessors.push_back(resolve(n, p, "control predecessor"));
      } else if (is_computation_attr(a.name)) {
        for (const auto& [n, p] : names_in(m, a, in.name)) {
          auto it = m.index.find(n);
          if (it == m.index.end() || it->second >= ci)
            throw_hlo_error(p, n, std::string(it == m.index.end() ? "is not a computation of the module" : it->second == ci ? "is the computation this instruction is in (recursion)" : "is defined after its use") +
                                      "; expected " + a.name + " to name a computation defined above");
          in.called.push_back(it->second);
        }
      }
    }
  }
  // ROOT: at most one; none means the last instruction.
  if (c.instructions.empty()) throw_hlo_error(pos_of(m, c.line, c.column, ""), c.name, "has no instructions; expected at least a ROOT instruction");
  for (int i = 0; i < int(c.instructions.size()); ++i) {
    if (!c.instructions[i].is_root) continue;
    if (c.root >= 0) {
      const Instruction& in = c.instructions[i];
      throw_hlo_error(pos_of(m, in.line, in.column, in.name), "ROOT", "is the second ROOT of computation '" + c.name + "' (the first is '" + c.instructions[c.root].name + "'); expected one ROOT");
    }
    c.root = i;
  }
  if (c.root < 0) {
    c.root = int(c.instructions.size()) - 1;
    c.instructions.back().is_root = true;
  }
  // Parameters: numbers 0..n-1, each once, shapes as in the signature.
  std::vector<int> by_number;
  for (const Instruction& in : c.instructions) {
    if (in.opcode != "parameter") continue;
    const SourcePos at = pos_of(m, in.line, in.column, in.name);
    const int64_t n = *in.parameter_number;
    if (n >= int64_t(c.instructions.size()))
      throw_hlo_error(at, "parameter(" + std::to_string(n) + ")", "is beyond the computation's parameter count; expected parameter numbers 0..n-1");
    if (size_t(n) >= by_number.size()) by_number.resize(size_t(n) + 1, -1);
    if (by_number[size_t(n)] >= 0)
      throw_hlo_error(at, "parameter(" + std::to_string(n) + ")", "repeats the number of parameter '" + c.instructions[by_number[size_t(n)]].name + "'; expected each parameter number once");
    by_number[size_t(n)] = c.index.at(in.name);
  }
  for (size_t n = 0; n < by_number.size(); ++n)
    if (by_number[n] < 0) {
      const Instruction& last = c.instructions[by_number.back()];
      throw_hlo_error(pos_of(m, last.line, last.column, last.name), "parameter(" + std::to_string(by_number.size() - 1) + ")",
                      "leaves parameter number " + std::to_string(n) + " undefined; expected parameter numbers 0..n-1 without gaps");
    }
  if (c.has_signature) {
    const SourcePos at = pos_of(m, c.line, c.column, "");
    if (by_number.size() != c.params.size())
      throw_hlo_error(at, c.name, "has " + std::to_string(c.params.size()) + " parameters in its signature but " + std::to_string(by_number.size()) + " parameter instructions; expected them to agree");
    for (size_t n = 0; n < by_number.size(); ++n) {
      const Instruction& p = c.instructions[by_number[n]];
      if (!p.shape.same_type_and_dims(c.params[n].second))
        throw_hlo_error(pos_of(m, p.line, p.column, p.name), p.shape.to_string(),
                        "differs from the signature's parameter " + std::to_string(n) + " '" + c.params[n].first + "', " + c.params[n].second.to_string() + "; expected the same shape");
    }
    const Instruction& r = c.root_instruction();
    if (c.result && !r.shape.same_type_and_dims(*c.result))
      throw_hlo_error(pos_of(m, r.line, r.column, r.name), r.shape.to_string(),
                      "differs from computation '" + c.name + "'s result shape " + c.result->to_string() + "; expected the ROOT to have the signature's result shape");
  }
}

}  // namespace

bool is_computation_attr(std::string_view name) {
  // select/scatter: select-and-scatter's two computations.
  static constexpr std::array<std::string_view, 10> kNames{"to_apply", "calls", "condition", "body", "branch_computations",
                                                          "true_computation", "false_computation", "called_computations",
                                                          "select", "scatter"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

int called_slot(const Instruction& in, std::string_view attr) {
  size_t k = 0;
  for (const Attribute& a : in.attrs) {
    if (!is_computation_attr(a.name)) continue;
    if (a.name == attr) return k < in.called.size() ? int(k) : -1;
    ++k;
  }
  return -1;
}

void resolve_and_validate(Module& m) {
  // Every name first, so that a call of a computation defined below says so.
  for (int ci = 0; ci < int(m.computations.size()); ++ci) {
    const Computation& c = m.computations[ci];
    const auto [it, fresh] = m.index.emplace(c.name, ci);
    if (!fresh)
      throw_hlo_error(pos_of(m, c.line, c.column, ""), c.name, "names a second computation (the first is at line " + std::to_string(m.computations[it->second].line) + "); expected unique computation names");
  }
  for (int ci = 0; ci < int(m.computations.size()); ++ci) {
    Computation& c = m.computations[ci];
    if (c.is_entry) {
      if (m.entry >= 0)
        throw_hlo_error(pos_of(m, c.line, c.column, ""), "ENTRY", "marks a second entry computation (the first is '" + m.computations[m.entry].name + "'); expected one ENTRY");
      m.entry = ci;
    }
    validate_computation(m, c, ci);
  }
  if (m.entry < 0) {
    const Computation& last = m.computations.back();
    throw_hlo_error(pos_of(m, last.line, last.column, ""), last.name, "is the last computation and none is marked ENTRY; expected 'ENTRY' before the entry computation's name");
  }
}

}  // namespace tpusim::hlo
