// The syntax tree of an XLA HLO text module (docs/hlo.md): what the text says, names resolved to
// indices, nothing inferred. Built by parse_hlo_module() (hlo_parser.h); the typed attribute readers
// are in hlo_attrs.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tpusim::hlo {

// XLA's PrimitiveType names as printed (xla_data.proto), plus `tuple` for tuple shapes.
enum class ElementType : uint8_t {
  kPred, kS2, kS4, kS8, kS16, kS32, kS64, kU2, kU4, kU8, kU16, kU32, kU64,
  kF16, kBF16, kF32, kF64, kC64, kC128,
  kF8E5M2, kF8E4M3, kF8E4M3FN, kF8E4M3B11FNUZ, kF8E5M2FNUZ, kF8E4M3FNUZ, kF8E3M4, kF8E8M0FNU, kF4E2M1FN,
  kToken, kOpaque, kTuple,
};
std::string_view element_type_name(ElementType t);
std::optional<ElementType> element_type_from_name(std::string_view name);
// Storage bits of one element (pred: 8, as XLA stores it); 0 for token, opaque and tuple.
int element_type_bits(ElementType t);

struct Shape {
  ElementType type = ElementType::kF32;
  std::vector<int64_t> dims;           // the bound for `<=N`; -1 for an unbounded `?`
  std::vector<bool> dynamic;           // per dim: written `<=N` or `?`
  bool has_layout = false;
  std::vector<int64_t> minor_to_major;  // the layout's dimension order, `{1,0}`
  std::string layout;                   // the layout as written without braces: "1,0:T(8,128)(2,1)"
  std::vector<Shape> tuple;             // the elements when type == kTuple

  bool is_tuple() const { return type == ElementType::kTuple; }
  // Element count of an array shape (bounds for dynamic dims; 0 for `?` or a tuple).
  int64_t elements() const;
  // "f32[2,<=3]{1,0}" / "(f32[], s32[])", as XLA prints it.
  std::string to_string() const;
  // Same element types, dims and tuple structure; layouts ignored.
  bool same_type_and_dims(const Shape& o) const;
};

// A constant's literal as written; `scalar` when it is one number (true/false as 1/0, inf, nan).
struct Literal {
  std::string raw;
  std::optional<double> scalar;
  bool elided = false;  // `{...}`: the dump left the values out
};

// `name=value`, the value as written (braces included); line/column of the value's first character.
struct Attribute {
  std::string name;
  std::string value;
  int line = 0;
  int column = 0;
};

struct Instruction {
  std::string name;  // without '%'
  std::string opcode;
  Shape shape;
  bool is_root = false;  // written ROOT (or the last instruction of a computation without ROOT)
  std::vector<std::string> operand_names;
  std::vector<int> operands;                         // indices into the computation's instructions
  std::vector<std::optional<Shape>> operand_shapes;  // older dumps write `f32[2] %x`
  std::vector<std::pair<int, int>> operand_positions;  // line, column of each operand's name
  std::optional<int64_t> parameter_number;
  std::optional<Literal> literal;  // constant(...)
  std::vector<Attribute> attrs;    // in order, as written
  // Computations named by to_apply, calls, condition, body, branch_computations, ... (module indices),
  // in attribute order.
  std::vector<int> called;
  std::vector<int> control_predecessors;  // control-predecessors={...}: instruction indices
  int line = 0;
  int column = 0;

  const Attribute* attr(std::string_view name) const;
};

struct Computation {
  std::string name;
  bool is_entry = false;
  bool has_signature = false;  // `%c (p: f32[2]) -> f32[2] {`; JAX's newer form has none
  std::vector<std::pair<std::string, Shape>> params;
  std::optional<Shape> result;
  std::vector<Instruction> instructions;
  int root = -1;
  std::vector<Attribute> attrs;  // after the closing brace, e.g. execution_thread="host"
  int line = 0;
  int column = 0;
  std::unordered_map<std::string, int> index;  // instruction name -> index

  const Instruction& root_instruction() const { return instructions.at(root); }
  const Instruction* find(std::string_view name) const;
};

// One entry of input_output_alias={ {0}: (0, {}, may-alias) }.
struct InputOutputAlias {
  std::vector<int64_t> output_index;
  int64_t parameter = 0;
  std::vector<int64_t> parameter_index;
  std::string kind;  // "may-alias" or "must-alias" ("" when not written)
};

struct Module {
  std::string file;  // as given to the parser; named in errors
  std::string name;
  std::vector<Attribute> attrs;  // every header attribute, raw
  std::string entry_computation_layout;  // raw, without braces ("" when absent)
  std::vector<InputOutputAlias> input_output_alias;
  int64_t replica_count = 1;
  int64_t num_partitions = 1;
  // is_scheduled=true: the instructions of each computation are in the order they run (XLA's
  // scheduler ran); the import keeps that order (models::Graph::scheduled).
  bool is_scheduled = false;
  std::vector<Computation> computations;  // in text order; callees come before their callers
  int entry = -1;
  std::unordered_map<std::string, int> index;  // computation name -> index

  const Computation& entry_computation() const { return computations.at(entry); }
  const Computation* find(std::string_view name) const;
  size_t instruction_count() const;
};

}  // namespace tpusim::hlo
