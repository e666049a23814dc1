// The schema framework on a toy struct that uses every supported field type.
#include <gtest/gtest.h>

#include "config/schema.h"
#include "config/suggest.h"
#include "config/tree.h"
#include "tests/config/test_util.h"

namespace tpusim::config {
namespace {

using tpusim::testing::config_error_of;
using tpusim::testing::contains;

struct Inner {
  uint32_t count = 0;
  double ratio = 0;
};

struct Toy {
  uint32_t small = 0;
  uint64_t big = 0;
  bool flag = false;
  std::string mode;
  std::string label;
  std::vector<uint32_t> dims;
  std::vector<bool> wrap;
  std::map<std::string, uint64_t> shape;
  Inner inner;
};

const Schema<Inner>& inner_schema() {
  static const Schema<Inner> s = [] {
    Schema<Inner> s("Inner", "A nested section.");
    s.field(&Inner::count, "count").range(1, 16).doc("things");
    s.field(&Inner::ratio, "ratio").greater_than(0).max(1).doc("a fraction");
    s.check([](const Inner& i, const CheckContext& c) {
      if (i.count == 13) c.fail("count", "must not be 13", "pick 12 or 14");
    });
    return s;
  }();
  return s;
}

const Schema<Toy>& toy_schema() {
  static const Schema<Toy> s = [] {
    Schema<Toy> s("Toy", "Every field type.");
    s.field(&Toy::small, "small_mhz").unit("MHz").range(1, 16).doc("a small integer");
    s.field(&Toy::big, "big_bytes").unit("bytes").default_value(1ull << 40).doc("a 64-bit integer");
    s.field(&Toy::flag, "flag").default_value(false).doc("a bool");
    s.field(&Toy::mode, "mode").one_of({"simple", "detailed"}).doc("a variant").source("STYLE.md rule 3");
    s.field(&Toy::label, "label").default_value("a b: c").doc("free text");
    s.field(&Toy::dims, "dims").size(1, 3).range(1, 1024).doc("a list");
    s.field(&Toy::wrap, "wrap").size(1, 3).doc("a list of bools");
    s.field(&Toy::shape, "shape").min(1).default_value({}).doc("a map");
    s.section(&Toy::inner, "inner", inner_schema());
    return s;
  }();
  return s;
}

const char* kToy = R"(small_mhz: 8
mode: simple
dims: [2, 4]
wrap: [true, false]
shape: {m: 3, n: 5}
inner:
  count: 4
  ratio: 0.25
)";

Toy parse(const std::string& text, const std::vector<Override>& ovs = {}) {
  Node root = parse_yaml(text, "toy.yaml");
  apply_overrides(root, toy_schema(), ovs);
  return toy_schema().parse(root);
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(Schema, ParsesEveryTypeAndAppliesDefaults) {
  const Toy t = parse(kToy);
  EXPECT_EQ(t.small, 8u);
  EXPECT_EQ(t.big, 1ull << 40);
  EXPECT_FALSE(t.flag);
  EXPECT_EQ(t.mode, "simple");
  EXPECT_EQ(t.label, "a b: c");
  EXPECT_EQ(t.dims, (std::vector<uint32_t>{2, 4}));
  EXPECT_EQ(t.wrap, (std::vector<bool>{true, false}));
  EXPECT_EQ(t.shape, (std::map<std::string, uint64_t>{{"m", 3}, {"n", 5}}));
  EXPECT_EQ(t.inner.count, 4u);
  EXPECT_DOUBLE_EQ(t.inner.ratio, 0.25);
}

TEST(Schema, DumpRoundTripsAndCarriesUnitComments) {
  Toy t = parse(kToy);
  t.label = "true";  // must be quoted to read back as a string
  t.inner.ratio = 0.1 + 0.2;
  const std::string y = toy_schema().dump(t);
  EXPECT_TRUE(contains(y, "small_mhz: 8")) << y;
  EXPECT_TRUE(contains(y, "# MHz — a small integer")) << y;
  EXPECT_TRUE(contains(y, "label: \"true\"")) << y;
  EXPECT_TRUE(contains(y, "inner:")) << y;
  const Toy back = toy_schema().parse(parse_yaml(y, "dump"));
  EXPECT_TRUE(toy_schema().equal(t, back)) << y;
  EXPECT_EQ(toy_schema().to_json(t), toy_schema().to_json(back));
}

TEST(Schema, UnknownKeySuggestsClosest) {
  std::string what;
  auto e = config_error_of([] { parse(replace(kToy, "  ratio:", "  raito:")); }, &what);
  EXPECT_EQ(e.file, "toy.yaml");
  EXPECT_EQ(e.yaml_path, "inner.raito");
  EXPECT_EQ(e.line, 8);
  EXPECT_TRUE(contains(e.rule, "unknown key in 'inner'")) << what;
  EXPECT_EQ(e.suggestion, "did you mean 'ratio'?");
  EXPECT_EQ(what, "toy.yaml:8: inner.raito: unknown key in 'inner'; did you mean 'ratio'?");
}

TEST(Schema, UnknownKeyFarFromAllListsValidKeys) {
  auto e = config_error_of([] { parse(std::string(kToy) + "zzz: 1\n"); });
  EXPECT_EQ(e.yaml_path, "zzz");
  EXPECT_TRUE(contains(e.suggestion, "valid keys: small_mhz, big_bytes, flag, mode")) << e.suggestion;
}

TEST(Schema, UnitInValueHints) {
  auto e = config_error_of([] { parse(replace(kToy, "small_mhz: 8", "small_mhz: 8MHz")); });
  EXPECT_EQ(e.value, "8MHz");
  EXPECT_EQ(e.rule, "must be an integer in [1, 16]");
  EXPECT_TRUE(contains(e.suggestion, "unit is part of the key name"));
}

TEST(Schema, WrongTypeAndOutOfRange) {
  auto e = config_error_of([] { parse(replace(kToy, "small_mhz: 8", "small_mhz: eight")); });
  EXPECT_EQ(e.line, 1);
  EXPECT_EQ(e.value, "eight");
  EXPECT_EQ(e.rule, "must be an integer in [1, 16]");
  e = config_error_of([] { parse(replace(kToy, "small_mhz: 8", "small_mhz: 17")); });
  EXPECT_EQ(e.value, "17");
  e = config_error_of([] { parse(replace(kToy, "small_mhz: 8", "small_mhz: -1")); });
  EXPECT_EQ(e.value, "-1");
  e = config_error_of([] { parse(replace(kToy, "small_mhz: 8", "small_mhz: 2.5")); });
  EXPECT_EQ(e.value, "2.5");
  e = config_error_of([] { parse(replace(kToy, "small_mhz: 8", "small_mhz: [8]")); });
  EXPECT_EQ(e.value, "[8]");
  e = config_error_of([] { parse(replace(kToy, "small_mhz: 8", "small_mhz:")); });
  EXPECT_TRUE(contains(e.rule, "has no value")) << e.rule;
  e = config_error_of([] { parse(replace(kToy, "ratio: 0.25", "ratio: 0")); });
  EXPECT_EQ(e.yaml_path, "inner.ratio");
  EXPECT_EQ(e.rule, "must be a number in (0, 1]");
  e = config_error_of([] { parse(replace(kToy, "ratio: 0.25", "ratio: .nan")); });
  EXPECT_EQ(e.rule, "must be a number in (0, 1]");
  e = config_error_of([] { parse(std::string(kToy) + "flag: yes\n"); });
  EXPECT_EQ(e.rule, "must be true or false");
  e = config_error_of([] { parse(std::string(kToy) + "big_bytes: 99999999999999999999999\n"); });
  EXPECT_TRUE(contains(e.rule, "at most 18446744073709551615")) << e.rule;
}

TEST(Schema, OneOfSuggests) {
  auto e = config_error_of([] { parse(replace(kToy, "mode: simple", "mode: smple")); });
  EXPECT_EQ(e.yaml_path, "mode");
  EXPECT_EQ(e.rule, "must be one of: simple, detailed");
  EXPECT_EQ(e.suggestion, "did you mean 'simple'?");
}

TEST(Schema, ListsCheckLengthAndElements) {
  auto e = config_error_of([] { parse(replace(kToy, "dims: [2, 4]", "dims: [2, 0]")); });
  EXPECT_EQ(e.yaml_path, "dims[1]");
  EXPECT_EQ(e.rule, "must be an integer in [1, 1024]");
  e = config_error_of([] { parse(replace(kToy, "dims: [2, 4]", "dims: [1, 1, 1, 1]")); });
  EXPECT_EQ(e.yaml_path, "dims");
  EXPECT_EQ(e.rule, "must be a list of 1 to 3 integers, each in [1, 1024]");
  e = config_error_of([] { parse(replace(kToy, "dims: [2, 4]", "dims: 4")); });
  EXPECT_TRUE(contains(e.suggestion, "[2, 2]"));
  e = config_error_of([] { parse(replace(kToy, "wrap: [true, false]", "wrap: [true, 1]")); });
  EXPECT_EQ(e.yaml_path, "wrap[1]");
  e = config_error_of([] { parse(replace(kToy, "shape: {m: 3, n: 5}", "shape: {m: 0}")); });
  EXPECT_EQ(e.yaml_path, "shape.m");
  EXPECT_EQ(e.rule, "must be an integer >= 1");
}

TEST(Schema, MissingRequiredKeyAndSection) {
  auto e = config_error_of([] { parse(replace(kToy, "  count: 4\n", "")); });
  EXPECT_EQ(e.yaml_path, "inner.count");
  EXPECT_EQ(e.line, 6);  // the `inner:` line
  EXPECT_EQ(e.rule, "missing required key (things; must be an integer in [1, 16])");
  e = config_error_of([] { parse(replace(kToy, "inner:\n  count: 4\n  ratio: 0.25\n", "")); });
  EXPECT_EQ(e.yaml_path, "inner");
  EXPECT_TRUE(contains(e.rule, "missing required section")) << e.rule;
  e = config_error_of([] { parse(replace(kToy, "inner:\n  count: 4\n  ratio: 0.25\n", "inner: 3\n")); });
  EXPECT_TRUE(contains(e.rule, "must be a mapping (a section with keys: count, ratio)")) << e.rule;
}

TEST(Schema, CrossFieldCheckPointsAtTheKey) {
  auto e = config_error_of([] { parse(replace(kToy, "count: 4", "count: 13")); });
  EXPECT_EQ(e.yaml_path, "inner.count");
  EXPECT_EQ(e.line, 7);
  EXPECT_EQ(e.value, "13");
  EXPECT_EQ(e.rule, "must not be 13");
  EXPECT_EQ(e.suggestion, "pick 12 or 14");
}

TEST(Schema, YamlSyntaxErrorHasLine) {
  std::string what;
  auto e = config_error_of([] { parse("small_mhz: 8\nmode: : simple\ndims: [1]\n"); }, &what);
  EXPECT_EQ(what, "toy.yaml:2: YAML syntax error: illegal map value");
  e = config_error_of([] { parse("small_mhz: 8\n\tmode: simple\n"); });
  EXPECT_EQ(e.line, 2);
  EXPECT_TRUE(contains(e.rule, "YAML syntax error: illegal tab")) << e.rule;
  e = config_error_of([] { parse("small_mhz: 8\nsmall_mhz: 9\n"); });
  EXPECT_EQ(e.line, 2);
  EXPECT_TRUE(contains(e.rule, "duplicate key"));
  e = config_error_of([] { parse("- 1\n- 2\n"); });
  EXPECT_TRUE(contains(e.rule, "the document must be a mapping")) << e.rule;
}

TEST(Schema, OverridesSetValuesListsAndSections) {
  const Toy t = parse(kToy, {{"small_mhz", "16"}, {"dims", "[4,4,2]"}, {"wrap", "[false, false, true]"},
                             {"inner", "{count: 2}"}, {"shape.k", "7"}, {"flag", "true"}});
  EXPECT_EQ(t.small, 16u);
  EXPECT_EQ(t.dims, (std::vector<uint32_t>{4, 4, 2}));
  EXPECT_EQ(t.inner.count, 2u);
  EXPECT_DOUBLE_EQ(t.inner.ratio, 0.25);  // a section override merges
  EXPECT_EQ(t.shape.at("k"), 7u);
  EXPECT_TRUE(t.flag);
}

TEST(Schema, OverrideErrors) {
  std::string what;
  auto e = config_error_of([] { parse(kToy, {{"inner.cont", "3"}}); }, &what);
  EXPECT_EQ(e.file, "--set");
  EXPECT_EQ(e.yaml_path, "inner.cont");
  EXPECT_EQ(e.suggestion, "did you mean 'count'?");
  EXPECT_EQ(what, "--set: inner.cont: unknown key in 'inner'; did you mean 'count'?");
  e = config_error_of([] { parse(kToy, {{"inner.count", "0"}}); }, &what);
  EXPECT_EQ(what, "--set: inner.count: value '0' must be an integer in [1, 16]");
  e = config_error_of([] { parse(kToy, {{"dims.x", "3"}}); });
  EXPECT_TRUE(contains(e.rule, "has no keys below it")) << e.rule;
  e = config_error_of([] { parse(kToy, {{"mode", "[oops"}}); });
  EXPECT_EQ(e.file, "--set");
  EXPECT_EQ(e.yaml_path, "mode");
  EXPECT_TRUE(contains(e.rule, "YAML syntax error")) << e.rule;
}

TEST(Schema, ParseOverride) {
  const Override o = parse_override("a.b_c.d=[1, 2]=x");
  EXPECT_EQ(o.path, "a.b_c.d");
  EXPECT_EQ(o.value, "[1, 2]=x");
  EXPECT_EQ(o.origin, "--set");
  for (const char* bad : {"abc", "=3", "a..b=3", "a.=3", "a b=3"}) {
    auto e = config_error_of([&] { parse_override(bad); });
    EXPECT_TRUE(contains(e.rule, "expected PATH=VALUE")) << bad;
    EXPECT_EQ(e.value, bad);
  }
}

TEST(Schema, MarkdownReference) {
  const std::string md = toy_schema().markdown();
  EXPECT_TRUE(contains(md, "### Toy")) << md;
  EXPECT_TRUE(contains(md, "| `small_mhz` | integer (32-bit) | MHz | required | [1, 16] | a small integer |")) << md;
  EXPECT_TRUE(contains(md, "| `mode` | string |  | required | `simple`, `detailed` | a variant *Source:* STYLE.md rule 3 |")) << md;
  EXPECT_TRUE(contains(md, "### `inner` — Inner")) << md;
  EXPECT_TRUE(contains(md, "(0, 1]")) << md;
}

TEST(Tree, FlowTextParsesBackToTheSameTree) {
  // What a sweep passes as `--set PATH=VALUE`: any YAML value, written so that YAML reads it back.
  for (const char* text : {"128", "max_length", "[true, false]", "{a: 1, b: [2, 3]}", "'multiple_of:32'",
                           "\"a, b\"", "'#not a comment'", "'-dash'", "\"say \\\"hi\\\"\""}) {
    const Node n = parse_yaml(text, "t.yaml");
    const std::string flow = n.flow();
    const Node again = parse_yaml(flow, "t.yaml");
    EXPECT_EQ(again.text(), n.text()) << text << " -> " << flow;
    EXPECT_EQ(again.flow(), flow) << text;
  }
  EXPECT_EQ(parse_yaml("multiple_of:32", "t").flow(), "\"multiple_of:32\"");
  EXPECT_EQ(parse_yaml("[1, [2, 3]]", "t").flow(), "[1, [2, 3]]");
}

TEST(Suggest, ClosestName) {
  const std::vector<std::string> keys = {"clock_mhz", "bandwidth_gbyte_per_s", "channels", "mxu"};
  EXPECT_EQ(closest("clok_mhz", keys), "clock_mhz");
  EXPECT_EQ(closest("chanels", keys), "channels");
  EXPECT_EQ(closest("mux", keys), "mxu");
  EXPECT_EQ(closest("bandwidth", keys), "bandwidth_gbyte_per_s");
  EXPECT_EQ(closest("bandwidth_gbps", keys), "bandwidth_gbyte_per_s");
  EXPECT_EQ(closest("zzz", keys), std::nullopt);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);
}

}  // namespace
}  // namespace tpusim::config

// Hostile YAML is bounded (config/tree.h): a self-referencing alias is infinitely deep, an alias
// bomb is small text with exponentially many nodes, a second document would be ignored.
namespace tpusim::config {
namespace {

ConfigError yaml_error(const std::string& text) {
  try {
    parse_yaml(text, "h.yaml");
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << text;
  return ConfigError({});
}

TEST(Tree, RecursiveAliasIsADepthError) {
  const ConfigError e = yaml_error("a: &a [*a]\n");
  EXPECT_EQ(e.info().file, "h.yaml");
  EXPECT_EQ(e.info().line, 1);
  EXPECT_NE(e.info().rule.find("nests deeper than 64 levels"), std::string::npos) << e.what();
}

TEST(Tree, AliasBombIsANodeBudgetError) {
  std::string s = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {  // 10^8 values after expansion
    s += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) s += std::string(i ? ", " : "") + "*" + char(c - 1);
    s += "]\n";
  }
  const ConfigError e = yaml_error(s);
  EXPECT_NE(e.info().rule.find("expands to more than 1048576 values"), std::string::npos) << e.what();
}

TEST(Tree, DeepButFiniteNestingWithinTheLimitParses) {
  std::string s = "a: ";
  for (int i = 0; i < 60; ++i) s += "[";
  for (int i = 0; i < 60; ++i) s += "]";
  EXPECT_NO_THROW(parse_yaml(s + "\n", "h.yaml"));
}

TEST(Tree, YamlCppsOwnDepthGuardIsNamed) {  // it said "YAML syntax error: bad file"
  const ConfigError e = yaml_error("a: " + std::string(500, '[') + std::string(500, ']') + "\n");
  EXPECT_EQ(e.info().line, 1);
  EXPECT_NE(e.info().rule.find("nests deeper than 64 levels"), std::string::npos) << e.what();
}

// yaml-cpp's LoadAll loops forever on a stray flow token, yielding empty documents and allocating
// (found by tests/fuzz/config_loader_fuzzer: `tpusim validate` of this 8-byte file ran until killed).
TEST(Tree, StrayFlowTokenIsASyntaxErrorNotAHang) {
  for (const char* text : {", Att# e", "a: 1\n,\n", "]", "}\nb: 2\n"}) {
    const ConfigError e = yaml_error(text);
    EXPECT_EQ(e.info().file, "h.yaml");
    EXPECT_GE(e.info().line, 1) << e.what();
    EXPECT_NE(e.info().rule.find("YAML syntax error"), std::string::npos) << e.what();
  }
}

// Strings of a config reach JSON (report.json), which must be UTF-8: a workload `name: "\xff"` was an
// internal error (exit 1) when the report was written (found by tests/fuzz/config_loader_fuzzer).
TEST(Tree, TextThatIsNotUtf8IsAnError) {
  const ConfigError e = yaml_error("kind: kernel\nname: \"ok \xff\xfe\"\n");
  EXPECT_EQ(e.info().line, 2);
  EXPECT_EQ(e.info().yaml_path, "name");
  EXPECT_NE(e.info().rule.find("not valid UTF-8 text (byte 0xFF at offset 3)"), std::string::npos) << e.what();
  EXPECT_NE(yaml_error("\xc0\xaf: 1\n").info().rule.find("a key is not valid UTF-8"), std::string::npos);  // overlong '/'
  EXPECT_NE(yaml_error("a: \"\xed\xa0\x80\"\n").info().rule.find("UTF-8"), std::string::npos);  // a surrogate
  EXPECT_NO_THROW(parse_yaml("name: \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n", "h.yaml"));  // é € 😀
}

TEST(Tree, SecondDocumentIsAnError) {
  const ConfigError e = yaml_error("kind: kernel\n---\nkind: training\n");
  EXPECT_EQ(e.info().line, 3);
  EXPECT_NE(e.info().rule.find("one YAML document"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace tpusim::config
