#include "compiler/hlo/hlo_ast.h"

#include <array>

namespace tpusim::hlo {
namespace {

struct TypeInfo {
  ElementType type;
  std::string_view name;
  int bits;
};
// Names as XLA prints them (primitive_util::LowercasePrimitiveTypeName).
constexpr std::array<TypeInfo, 31> kTypes{{
    {ElementType::kPred, "pred", 8},     {ElementType::kS2, "s2", 2},          {ElementType::kS4, "s4", 4},
    {ElementType::kS8, "s8", 8},         {ElementType::kS16, "s16", 16},       {ElementType::kS32, "s32", 32},
    {ElementType::kS64, "s64", 64},      {ElementType::kU2, "u2", 2},          {ElementType::kU4, "u4", 4},
    {ElementType::kU8, "u8", 8},         {ElementType::kU16, "u16", 16},       {ElementType::kU32, "u32", 32},
    {ElementType::kU64, "u64", 64},      {ElementType::kF16, "f16", 16},       {ElementType::kBF16, "bf16", 16},
    {ElementType::kF32, "f32", 32},      {ElementType::kF64, "f64", 64},       {ElementType::kC64, "c64", 64},
    {ElementType::kC128, "c128", 128},   {ElementType::kF8E5M2, "f8e5m2", 8},  {ElementType::kF8E4M3, "f8e4m3", 8},
    {ElementType::kF8E4M3FN, "f8e4m3fn", 8}, {ElementType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 8},
    {ElementType::kF8E5M2FNUZ, "f8e5m2fnuz", 8}, {ElementType::kF8E4M3FNUZ, "f8e4m3fnuz", 8},
    {ElementType::kF8E3M4, "f8e3m4", 8}, {ElementType::kF8E8M0FNU, "f8e8m0fnu", 8},
    {ElementType::kF4E2M1FN, "f4e2m1fn", 4}, {ElementType::kToken, "token", 0},
    {ElementType::kOpaque, "opaque", 0}, {ElementType::kTuple, "tuple", 0},
}};

}  // namespace

std::string_view element_type_name(ElementType t) {
  for (const TypeInfo& i : kTypes)
    if (i.type == t) return i.name;
  return "?";
}

std::optional<ElementType> element_type_from_name(std::string_view name) {
  for (const TypeInfo& i : kTypes)
    if (i.name == name && i.type != ElementType::kTuple) return i.type;
  return std::nullopt;
}

int element_type_bits(ElementType t) {
  for (const TypeInfo& i : kTypes)
    if (i.type == t) return i.bits;
  return 0;
}

int64_t Shape::elements() const {
  if (is_tuple()) return 0;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return 0;
    n *= d;  // each d <= kMaxDimSize and the product is checked when parsed
  }
  return n;
}

std::string Shape::to_string() const {
  std::string s;
  if (is_tuple()) {
    s = "(";
    for (size_t i = 0; i < tuple.size(); ++i) s += (i ? ", " : "") + tuple[i].to_string();
    return s + ")";
  }
  s = std::string(element_type_name(type)) + "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    if (dims[i] < 0) s += "?";
    else s += (dynamic[i] ? "<=" : "") + std::to_string(dims[i]);
  }
  s += "]";
  if (has_layout) s += "{" + layout + "}";
  return s;
}

bool Shape::same_type_and_dims(const Shape& o) const {
  if (type != o.type || dims != o.dims || dynamic != o.dynamic || tuple.size() != o.tuple.size()) return false;
  for (size_t i = 0; i < tuple.size(); ++i)
    if (!tuple[i].same_type_and_dims(o.tuple[i])) return false;
  return true;
}

const Attribute* Instruction::attr(std::string_view name) const {
  for (const Attribute& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

const Instruction* Computation::find(std::string_view name) const {
  auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &instructions[it->second];
}

const Computation* Module::find(std::string_view name) const {
  auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &computations[it->second];
}

size_t Module::instruction_count() const {
  size_t n = 0;
  for (const Computation& c : computations) n += c.instructions.size();
  return n;
}

}  // namespace tpusim::hlo
