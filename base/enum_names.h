// An enum's YAML names, in one table per enum: the one place its strings are spelt. A config schema
// reads an enum field through the table found by argument-dependent lookup, `enum_names(E{})`
// (declared beside the enum), so the field parses straight into the enum, lists the table's names as
// its allowed values, and dumps, prints and writes to JSON the name.
#pragma once
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tpusim {

template <class E>
using NameTable = std::vector<std::pair<E, const char*>>;

// The names of a table, in its order (a schema's allowed values).
template <class E>
std::vector<std::string> names_of(const NameTable<E>& t) {
  std::vector<std::string> n;
  for (const auto& [e, s] : t) n.push_back(s);
  return n;
}

// The YAML name of a value ("?" for a value the table lacks: a programming error).
template <class E>
const char* name_of(const NameTable<E>& t, E e) {
  for (const auto& [v, s] : t)
    if (v == e) return s;
  return "?";
}

// The value of a YAML name; nullopt when it is none of the table's.
template <class E>
std::optional<E> find_value(const NameTable<E>& t, std::string_view name) {
  for (const auto& [v, s] : t)
    if (name == s) return v;
  return std::nullopt;
}

// An enum that declares its table: `const NameTable<E>& enum_names(E)` beside it.
template <class E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) {
  { enum_names(e) } -> std::convertible_to<const NameTable<E>&>;
};

// The name of a value of a named enum: `enum_name(Precision::kBf16)` is "bf16".
template <NamedEnum E>
const char* enum_name(E e) {
  return name_of(enum_names(e), e);
}

}  // namespace tpusim
