// Helpers of the HLO parser tests: the modules in tests/hlo/data, and the HloError of bad text.
#pragma once
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/hlo_error.h"
#include "compiler/hlo/hlo_parser.h"

namespace tpusim::hlo::testing {

inline Module data_module(const std::string& name) { return parse_hlo_file(std::string(TPUSIM_HLO_DATA) + "/" + name); }

struct ErrorAt {
  int line = 0, column = 0;
  std::string instruction, message;
};

// Parses `text` (named "t.hlo"), which must fail with HloError; returns where and what.
inline ErrorAt error_of(const std::string& text) {
  try {
    parse_hlo_module(text, "t.hlo");
  } catch (const HloError& e) {
    return {e.line(), e.column(), e.instruction(), e.what()};
  }
  ADD_FAILURE() << "expected an HloError for:\n" << text;
  return {};
}

inline const Instruction& inst(const Module& m, const std::string& comp, const std::string& name) {
  const Computation* c = m.find(comp);
  if (!c) throw std::runtime_error("no computation " + comp);
  const Instruction* i = c->find(name);
  if (!i) throw std::runtime_error("no instruction " + name);
  return *i;
}

// `text` with one to three edits (a digit changed, an opcode replaced by one of `opcodes`, the rest of
// a line cut) drawn from a fixed linear congruential stream `seed`: the mutated modules of the
// totality tests (the importer's, the SPMD pass's).
inline std::string mutate(const std::string& text, uint64_t& seed, const std::vector<std::string>& opcodes) {
  auto next = [&] { return (seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  std::string t = text;
  for (int edits = 1 + int(next() % 3); edits-- > 0;) {
    const size_t p = next() % t.size();
    switch (next() % 3) {
      case 0:
        if (std::isdigit(static_cast<unsigned char>(t[p]))) t[p] = char('0' + next() % 10);
        break;
      case 1: {
        const std::string& op = opcodes[next() % opcodes.size()];
        const size_t paren = t.find('(', p);
        const size_t sp = paren == std::string::npos ? paren : t.rfind(' ', paren);
        if (sp != std::string::npos && sp > p) t.replace(sp + 1, paren - sp - 1, op);
        break;
      }
      default: {
        const size_t eol = t.find('\n', p);
        if (eol != std::string::npos && eol + 1 < t.size()) t.erase(p, eol - p);
      }
    }
  }
  return t;
}

}  // namespace tpusim::hlo::testing
