#include "compiler/hlo/hlo_parser.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/hlo/hlo_limits.h"
#include "compiler/hlo/hlo_scanner.h"
#include "compiler/hlo/hlo_validate.h"

namespace tpusim::hlo {
namespace {

constexpr std::string_view kTypeList = "pred, s8..s64, u8..u64, f16, bf16, f32, f64, c64, c128, f8e4m3fn, token, ...";

class Parser {
 public:
  Parser(std::string_view text, const std::string* file) : s_(text, file) {}

  void module(Module& m) {
    s_.skip_space();
    if (!s_.accept_word("HloModule")) s_.fail("is not the start of a module; expected 'HloModule NAME'");
    m.name = s_.name("the module's name after 'HloModule'");
    header_attrs(m);
    while (true) {
      s_.skip_space();
      if (s_.eof()) break;
      m.computations.push_back(computation());
    }
    if (m.computations.empty()) s_.fail("has no computation; expected at least the ENTRY computation");
  }

 private:
  void header_attrs(Module& m) {
    while (s_.accept(',', false)) {
      Attribute a = attribute("a module attribute such as replica_count=1");
      Scanner v(a.value, s_.here().file, a.line, a.column);
      if (a.name == "replica_count") {
        m.replica_count = positive(v, "replica_count");
      } else if (a.name == "num_partitions") {
        m.num_partitions = positive(v, "num_partitions");
      } else if (a.name == "entry_computation_layout") {
        m.entry_computation_layout = v.balanced("{(PARAMETER SHAPES)->RESULT SHAPE}");
      } else if (a.name == "is_scheduled") {
        m.is_scheduled = a.value == "true";
      } else if (a.name == "input_output_alias") {
        m.input_output_alias = aliases(v);
      }
      m.attrs.push_back(std::move(a));
    }
    end_of_line("',' and a module attribute, or the end of the HloModule line");
  }

  static int64_t positive(Scanner& v, std::string_view what) {
    v.skip_space();
    const SourcePos at = v.here();
    const int64_t n = v.integer("a positive integer");
    if (n < 1 || n > kMaxDeviceList) throw_hlo_error(at, std::to_string(n), "must be an integer in [1, " + std::to_string(kMaxDeviceList) + "] (" + std::string(what) + ")");
    return n;
  }

  static std::vector<int64_t> index_list(Scanner& v) {
    std::vector<int64_t> r;
    v.expect('{', "'{' opening a shape index such as {0} or {}");
    if (v.accept('}')) return r;
    do r.push_back(v.integer("an index"));
    while (v.accept(','));
    v.expect('}', "'}' closing the shape index");
    return r;
  }

  // { {0}: (0, {}, may-alias), {1}: (1, {}) }
  static std::vector<InputOutputAlias> aliases(Scanner& v) {
    std::vector<InputOutputAlias> r;
    v.expect('{', "'{' opening input_output_alias");
    if (v.accept('}')) return r;
    do {
      InputOutputAlias a;
      a.output_index = index_list(v);
      v.expect(':', "':' after the output index, as in {0}: (0, {}, may-alias)");
      v.expect('(', "'(' opening (PARAMETER, {INDEX}, KIND)");
      a.parameter = v.integer("the parameter number");
      v.expect(',', "',' after the parameter number");
      a.parameter_index = index_list(v);
      if (v.accept(',')) {
        v.skip_space();
        const SourcePos at = v.here();
        a.kind = v.name("may-alias or must-alias");
        if (a.kind != "may-alias" && a.kind != "must-alias") throw_hlo_error(at, a.kind, "is not an alias kind; expected may-alias or must-alias");
      }
      v.expect(')', "')' closing the alias");
      r.push_back(std::move(a));
    } while (v.accept(','));
    v.expect('}', "'}' closing input_output_alias");
    v.skip_space();
    if (!v.eof()) v.fail("follows input_output_alias; expected ',' and the next attribute");
    return r;
  }

  void end_of_line(std::string_view expected) {
    s_.skip_space(false);
    if (!s_.eof() && s_.peek() != '\n') s_.fail("is not what comes here; expected " + std::string(expected));
  }

  Attribute attribute(std::string_view expected) {
    s_.skip_space(false);
    Attribute a;
    a.name = s_.name(expected);
    s_.skip_space(false);
    if (s_.peek() != '=') s_.fail("is not what comes here; expected '=' after the attribute name '" + a.name + "'");
    s_.accept('=');
    s_.skip_space(false);
    const SourcePos p = s_.here();
    a.line = p.line;
    a.column = p.column;
    a.value = s_.raw_value("the value of attribute '" + a.name + "'");
    return a;
  }

  Shape shape(int depth) {
    if (depth > kMaxNesting)
      s_.fail("nests tuple shapes deeper than " + std::to_string(kMaxNesting) + " (the parser's limit, docs/hlo.md); expected a flatter shape");
    s_.skip_space();
    Shape sh;
    if (s_.accept('(')) {
      sh.type = ElementType::kTuple;
      if (s_.accept(')')) return sh;
      do sh.tuple.push_back(shape(depth + 1));
      while (s_.accept(','));
      s_.expect(')', "',' or ')' in a tuple shape");
      return sh;
    }
    const std::string_view tn = s_.peek_name();
    const auto t = element_type_from_name(tn);
    if (!t || s_.peek() == '%') s_.fail("is not a shape; expected an element type (" + std::string(kTypeList) + ") and [dims], or a tuple (...)");
    sh.type = *t;
    s_.name("an element type");
    if (s_.peek() != '[') s_.fail("is not what comes here; expected '[' and the dimensions after the element type '" + std::string(tn) + "'");
    s_.accept('[');
    int64_t product = 1;
    if (!s_.accept(']')) {
      do {
        if (sh.dims.size() >= kMaxRank) s_.fail("is one dimension too many; expected at most " + std::to_string(kMaxRank) + " dimensions");
        s_.skip_space();
        bool dyn = false;
        int64_t d = -1;
        if (s_.accept('?')) {
          dyn = true;
        } else {
          if (s_.peek() == '<' && s_.peek(1) == '=') {
            s_.accept('<');
            s_.accept('=');
            dyn = true;
          }
          s_.skip_space();
          const SourcePos at = s_.here();
          d = s_.integer("a dimension size, <=N or ?");
          if (d < 0 || d > kMaxDimSize) throw_hlo_error(at, std::to_string(d), "is not a dimension size; expected an integer in [0, 2^48]");
          if (d > 0 && product > kMaxDimSize / d) throw_hlo_error(at, std::to_string(d), "makes the shape's element count exceed 2^48 (the parser's limit)");
          product *= d;
        }
        sh.dims.push_back(d);
        sh.dynamic.push_back(dyn);
      } while (s_.accept(','));
      s_.expect(']', "',' or ']' in the dimensions");
    }
    if (s_.peek() == '{') layout(sh);
    return sh;
  }

  // {1,0} or {1,0:T(8,128)(2,1)}: the dimension order before ':', the rest (tiling, memory space) raw.
  void layout(Shape& sh) {
    const SourcePos at = s_.here();
    sh.layout = s_.balanced("a layout such as {1,0}");
    sh.has_layout = true;
    Scanner v(sh.layout, at.file, at.line, at.column + 1);
    v.instruction = s_.instruction;
    v.skip_space();
    if (v.eof() || v.peek() == ':') return;
    do sh.minor_to_major.push_back(v.integer("a dimension number in the layout"));
    while (v.accept(','));
    v.skip_space();
    if (!v.eof() && v.peek() != ':') v.fail("is not what comes here; expected ',' or ':' in the layout");
    for (int64_t d : sh.minor_to_major)
      if (d < 0 || d >= int64_t(sh.dims.size())) throw_hlo_error(at, "{" + sh.layout + "}", "names dimension " + std::to_string(d) + " of a rank-" + std::to_string(sh.dims.size()) + " shape; expected a permutation of 0.." + std::to_string(int64_t(sh.dims.size()) - 1));
  }

  Computation computation() {
    Computation c;
    s_.instruction.clear();
    const SourcePos at = s_.here();
    c.line = at.line;
    c.column = at.column;
    c.is_entry = s_.accept_word("ENTRY");
    c.name = s_.name("a computation name (or ENTRY)");
    if (s_.accept('(')) {
      c.has_signature = true;
      if (!s_.accept(')')) {
        do {
          std::string p = s_.name("a parameter name in the signature");
          s_.expect(':', "':' and the parameter's shape");
          c.params.emplace_back(std::move(p), shape(0));
        } while (s_.accept(','));
        s_.expect(')', "',' or ')' in the signature");
      }
      s_.skip_space();
      if (!(s_.peek() == '-' && s_.peek(1) == '>')) s_.fail("is not what comes here; expected '->' and the result shape");
      s_.accept('-');
      s_.accept('>');
      c.result = shape(0);
    }
    s_.expect('{', "'{' opening computation '" + c.name + "'");
    while (true) {
      s_.skip_space();
      if (s_.eof()) throw_hlo_error(at, c.name, "computation is not closed before the end of the file; expected '}'");
      if (s_.peek() == '}') break;
      instruction(c);
    }
    s_.accept('}');
    s_.instruction.clear();
    while (s_.accept(',', false)) c.attrs.push_back(attribute("a computation attribute such as execution_thread=\"host\""));
    end_of_line("the end of the line after computation '" + c.name + "'");
    return c;
  }

  void instruction(Computation& c) {
    Instruction in;
    const SourcePos at = s_.here();
    in.line = at.line;
    in.column = at.column;
    in.is_root = s_.accept_word("ROOT");
    in.name = s_.name("an instruction: [ROOT] NAME = SHAPE OPCODE(OPERANDS), ATTRIBUTES");
    s_.instruction = in.name;
    s_.expect('=', "'=' after the instruction name");
    in.shape = shape(0);
    in.opcode = s_.name("an opcode such as add or dot");
    if (s_.peek() != '(') s_.fail("is not what comes here; expected '(' and the operands after the opcode '" + in.opcode + "'");
    if (in.opcode == "parameter") {
      s_.accept('(');
      const SourcePos np = s_.here();
      const int64_t n = s_.integer("the parameter number");
      if (n < 0 || n >= kMaxDeviceList * 64) throw_hlo_error(np, std::to_string(n), "is not a parameter number; expected an integer in [0, 2^26)");
      in.parameter_number = n;
      s_.expect(')', "')' after the parameter number");
    } else if (in.opcode == "constant") {
      s_.skip_space();
      const SourcePos lp = s_.here();
      in.literal = literal(s_.balanced("'(' and the literal"), lp);
    } else {
      s_.accept('(');
      if (!s_.accept(')')) {
        do operand(in);
        while (s_.accept(','));
        s_.expect(')', "',' or ')' after an operand");
      }
    }
    while (s_.accept(',', false)) in.attrs.push_back(attribute("an attribute NAME=VALUE"));
    end_of_line("',' and an attribute, or the end of the instruction's line");
    const auto [it, fresh] = c.index.emplace(in.name, int(c.instructions.size()));
    if (!fresh)
      throw_hlo_error(at, in.name, "is defined twice in computation '" + c.name + "' (first at line " + std::to_string(c.instructions[it->second].line) + "); expected unique instruction names");
    c.instructions.push_back(std::move(in));
  }

  void operand(Instruction& in) {
    s_.skip_space();
    std::optional<Shape> sh;
    // Older dumps write each operand's shape before its name: `f32[2]{0} %x`, `(f32[], s32[]) %t`.
    const std::string_view n = s_.peek_name();
    if (s_.peek() == '(' || (s_.peek() != '%' && element_type_from_name(n) && s_.peek(n.size()) == '[')) sh = shape(0);
    s_.skip_space();
    const SourcePos at = s_.here();
    in.operand_positions.emplace_back(at.line, at.column);
    in.operand_names.push_back(s_.name("an operand name"));
    in.operand_shapes.push_back(std::move(sh));
  }

  // constant(0), constant(-inf), constant(true), constant({1, 2}), constant({...}) ...
  Literal literal(std::string raw, const SourcePos& at) {
    Literal l;
    size_t b = raw.find_first_not_of(" \t\r\n"), e = raw.find_last_not_of(" \t\r\n");
    l.raw = b == std::string::npos ? "" : raw.substr(b, e - b + 1);
    SourcePos p = at;
    p.instruction = s_.instruction;
    if (l.raw.empty()) throw_hlo_error(p, "()", "has no literal; expected a value such as constant(0) or constant({1, 2})");
    if (l.raw == "{...}") {
      l.elided = true;
      return l;
    }
    if (l.raw.find_first_of("{(") != std::string::npos) return l;  // an array or tuple: kept as written
    const std::string& t = l.raw;
    if (t == "true") l.scalar = 1;
    else if (t == "false") l.scalar = 0;
    else if (t == "inf" || t == "+inf") l.scalar = INFINITY;
    else if (t == "-inf") l.scalar = -INFINITY;
    else if (t == "nan" || t == "-nan") l.scalar = NAN;
    else {
      char* end = nullptr;
      const double v = std::strtod(t.c_str(), &end);
      // strtod also reads "infinity", hex floats and "nan(...)"; HLO prints none of them.
      if (end != t.c_str() + t.size() || t.find_first_of("xXnN") != std::string::npos)
        throw_hlo_error(p, t, "is not a literal; expected a number, true, false, inf, -inf, nan or {...}");
      l.scalar = v;
    }
    return l;
  }

  Scanner s_;
};

}  // namespace

Module parse_hlo_module(std::string_view text, const std::string& file) {
  Module m;
  m.file = file;
  if (text.size() > kMaxTextBytes)
    throw_hlo_error({&m.file, 1, 1, ""}, std::to_string(text.size()) + " bytes", "is larger than the parser's limit of 1 GiB (docs/hlo.md)");
  Parser(text, &m.file).module(m);
  resolve_and_validate(m);
  return m;
}

Module parse_hlo_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError({path, "", 0, "", "is a directory", "give the path of one HLO text dump (*.txt or *.hlo)"});
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ConfigError({path, "", 0, "", "cannot be read (no such file, or not readable)", "give the path of an HLO text dump (*.txt or *.hlo)"});
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0) throw ConfigError({path, "", 0, "", "is not a regular file", "give the path of an HLO text dump"});
  if (size_t(size) > kMaxTextBytes) throw ConfigError({path, "", 0, std::to_string(size) + " bytes", "is larger than the HLO parser's limit of 1 GiB (docs/hlo.md)", ""});
  f.seekg(0);
  std::string text(size_t(size), '\0');
  f.read(text.data(), size);
  return parse_hlo_module(text, path);
}

}  // namespace tpusim::hlo
