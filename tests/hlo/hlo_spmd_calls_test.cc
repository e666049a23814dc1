// The SPMD pass in called computations and its reduce-scatter (compiler/hlo/hlo_spmd_calls.cc,
// docs/hlo.md "SPMD partitioning"): a scan over layers (a while whose body holds Megatron's sharded
// dots, as JAX's lax.scan / Flax nn.scan write it) against the same layers unrolled in ENTRY; a
// gradient accumulator carried tiled; call and conditional bodies; an all-reduce whose result is used
// sharded becoming one reduce-scatter (bytes and time); the detection of a module XLA's partitioner
// already ran.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "compiler/hlo/hlo_import_stats.h"
#include "compiler/hlo/hlo_parser.h"
#include "tests/hlo/hlo_spmd_test_util.h"
#include "tests/hlo/hlo_test_util.h"

namespace tpusim::hlo {
namespace {

using namespace spmd_test;  // NOLINT: the helpers of hlo_spmd_test_util.h

constexpr int kLayers = 4;

// Megatron's MLP layer k (x [256,1024] replicated, W1 column-parallel, W2 row-parallel over 4
// partitions), its weights cut from stacked [L, ...] parameters by dynamic-slice at index `i`.
std::string layer(const std::string& x, const std::string& i, const std::string& k) {
  return "  w1d" + k + " = f32[1,1024,4096] dynamic-slice(w1s, " + i + ", zero, zero), dynamic_slice_sizes={1,1024,4096}\n"
         "  w1" + k + " = f32[1024,4096] reshape(w1d" + k + ")\n"
         "  w2d" + k + " = f32[1,4096,1024] dynamic-slice(w2s, " + i + ", zero, zero), dynamic_slice_sizes={1,4096,1024}\n"
         "  w2" + k + " = f32[4096,1024] reshape(w2d" + k + ")\n"
         "  h" + k + " = f32[256,4096] dot(" + x + ", w1" + k + "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
         "  zs" + k + " = f32[256,4096] broadcast(z), dimensions={}\n"
         "  a" + k + " = f32[256,4096] maximum(h" + k + ", zs" + k + ")\n"
         "  y" + k + " = f32[256,1024] dot(a" + k + ", w2" + k + "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n";
}

const std::string kParams =
    "  x = f32[256,1024] parameter(0), sharding={replicated}\n"
    "  w1s = f32[4,1024,4096] parameter(1), sharding={devices=[1,1,4]0,1,2,3}\n"
    "  w2s = f32[4,4096,1024] parameter(2), sharding={devices=[1,4,1]0,1,2,3}\n";
const std::string kState = "(s32[], f32[256,1024], f32[4,1024,4096], f32[4,4096,1024])";

// The layers as a while over the stacked weights (the counter, the activations and the weights carried).
std::string scan_module() {
  return "HloModule scan, num_partitions=4\n"
         "body {\n"
         "  p = " + kState + " parameter(0)\n"
         "  i = s32[] get-tuple-element(p), index=0\n"
         "  x = f32[256,1024] get-tuple-element(p), index=1\n"
         "  w1s = f32[4,1024,4096] get-tuple-element(p), index=2\n"
         "  w2s = f32[4,4096,1024] get-tuple-element(p), index=3\n"
         "  zero = s32[] constant(0)\n"
         "  z = f32[] constant(0)\n" +
         layer("x", "i", "") +
         "  one = s32[] constant(1)\n"
         "  next = s32[] add(i, one)\n"
         "  ROOT r = " + kState + " tuple(next, y, w1s, w2s)\n"
         "}\n"
         "cond {\n"
         "  p = " + kState + " parameter(0)\n"
         "  i = s32[] get-tuple-element(p), index=0\n"
         "  n = s32[] constant(" + std::to_string(kLayers) + ")\n"
         "  ROOT lt = pred[] compare(i, n), direction=LT\n"
         "}\n"
         "ENTRY main {\n" + kParams +
         "  c0 = s32[] constant(0)\n"
         "  t = " + kState + " tuple(c0, x, w1s, w2s)\n"
         "  w = " + kState + " while(t), condition=cond, body=body\n"
         "  ROOT out = f32[256,1024] get-tuple-element(w), index=1\n"
         "}\n";
}

// The same layers unrolled in ENTRY.
std::string unrolled_module() {
  std::string s = "HloModule unrolled, num_partitions=4\nENTRY main {\n" + kParams +
                  "  zero = s32[] constant(0)\n  z = f32[] constant(0)\n";
  std::string x = "x";
  for (int k = 0; k < kLayers; ++k) {
    const std::string ks = std::to_string(k);
    s += "  i" + ks + " = s32[] constant(" + ks + ")\n" + layer(x, "i" + ks, ks);
    x = "y" + ks;
  }
  const std::string last = "  " + x + " = ";
  return s.replace(s.rfind(last), last.size(), "  ROOT " + x + " = ") + "}\n";
}

// The scan's body is partitioned as ENTRY is: W1 and W2 quartered, one all-reduce per layer inside
// the body, the counter and the trip count kept; its time is the unrolled layers' within 3%.
TEST(HloSpmdCalls, ScanOverLayersAsUnrolled) {
  const SpmdResult scan = partition(scan_module());
  ASSERT_TRUE(scan.module) << scan.report.reason;
  EXPECT_TRUE(scan.report.unmodelled.empty()) << scan.report.unmodelled.front().reason;
  EXPECT_EQ(scan.report.collectives.at("all-reduce").count, 1);  // the body's, once in its text
  EXPECT_EQ(scan.report.local_slices, 0);
  const Module& m = *scan.module;
  ASSERT_EQ(m.computations.size(), 4u);  // the helper add, body, cond, ENTRY: the originals replaced
  const Computation& body = *m.find("body");
  EXPECT_EQ(inst(body, "p").shape.to_string(), "(s32[], f32[256,1024], f32[4,1024,1024], f32[4,1024,1024])");
  EXPECT_EQ(inst(body, "h").shape.dims, (std::vector<int64_t>{256, 1024}));
  EXPECT_EQ(inst(body, "w1d").attr("dynamic_slice_sizes")->value, "{1,1024,1024}");
  EXPECT_EQ(body.root_instruction().name, "r");  // the state comes back as it went in: no reshard
  EXPECT_EQ(entry_inst(m, "w").shape.to_string(), inst(body, "p").shape.to_string());
  EXPECT_EQ(entry_inst(m, "t").operand_names[0], "c0");  // the trip count stays readable
  ImportOptions io;
  io.replicas = 4;
  const HloImport imp = import_hlo(m, io);
  EXPECT_TRUE(imp.stats.unmodelled.empty()) << imp.stats.unmodelled.front().reason;
  int collectives = 0;
  for (const models::Node& n : imp.graph.nodes()) collectives += n.kind == models::OpKind::kCollective;
  EXPECT_EQ(collectives, kLayers);  // the body imported once per layer

  const SpmdResult flat = partition(unrolled_module());
  ASSERT_TRUE(flat.module);
  EXPECT_EQ(flat.report.collectives.at("all-reduce").count, kLayers);
  const double a = device_time(m, 4), b = device_time(*flat.module, 4);
  const double whole = device_time(parse_hlo_module(scan_module(), "w.hlo()"), 4);
  EXPECT_NEAR(a / b, 1.0, 0.03) << "scan " << a << " s, unrolled " << b << " s";
  EXPECT_LT(a, 0.7 * whole);
  std::printf("[ figures  ] %d Megatron MLP layers on 4 cores of v3-8: scanned (while) %.2f us, unrolled %.2f us, "
              "the while as written on every core %.2f us\n", kLayers, a * 1e6, b * 1e6, whole * 1e6);
}

// A scan-over-layers training step as JAX writes it (lax.scan / nn.scan): a forward loop that
// stacks each layer's input and hidden activation into [L, ...] buffers (dynamic-update-slice into
// zeros), a backward loop in reverse that reads them back and stacks the weight gradients, and the
// SGD update in ENTRY. Layer k's instructions, suffixed `s`, at index `k` (a scalar); `x`/`dy` the
// activations in, the stacks by name. Returns the names of the values out.
struct Fwd {
  std::string text, y, acts, ins;
};
Fwd fwd_layer(const std::string& s, const std::string& k, const std::string& x, const std::string& acts,
              const std::string& ins) {
  Fwd f;
  f.text = layer(x, k, s) +
           "  a3" + s + " = f32[1,256,4096] reshape(a" + s + ")\n"
           "  acts" + s + " = f32[4,256,4096] dynamic-update-slice(" + acts + ", a3" + s + ", " + k + ", zero, zero)\n"
           "  x3" + s + " = f32[1,256,1024] reshape(" + x + ")\n"
           "  ins" + s + " = f32[4,256,1024] dynamic-update-slice(" + ins + ", x3" + s + ", " + k + ", zero, zero)\n";
  f.y = "y" + s;
  f.acts = "acts" + s;
  f.ins = "ins" + s;
  return f;
}
struct Bwd {
  std::string text, dx, g1s, g2s;
};
Bwd bwd_layer(const std::string& s, const std::string& k, const std::string& dy, const std::string& acts,
              const std::string& ins, const std::string& g1s, const std::string& g2s) {
  Bwd b;
  b.text = "  ad" + s + " = f32[1,256,4096] dynamic-slice(" + acts + ", " + k + ", zero, zero), dynamic_slice_sizes={1,256,4096}\n"
           "  a" + s + " = f32[256,4096] reshape(ad" + s + ")\n"
           "  xd" + s + " = f32[1,256,1024] dynamic-slice(" + ins + ", " + k + ", zero, zero), dynamic_slice_sizes={1,256,1024}\n"
           "  x" + s + " = f32[256,1024] reshape(xd" + s + ")\n"
           "  w1d" + s + " = f32[1,1024,4096] dynamic-slice(w1s, " + k + ", zero, zero), dynamic_slice_sizes={1,1024,4096}\n"
           "  w1" + s + " = f32[1024,4096] reshape(w1d" + s + ")\n"
           "  w2d" + s + " = f32[1,4096,1024] dynamic-slice(w2s, " + k + ", zero, zero), dynamic_slice_sizes={1,4096,1024}\n"
           "  w2" + s + " = f32[4096,1024] reshape(w2d" + s + ")\n"
           "  g2" + s + " = f32[4096,1024] dot(a" + s + ", " + dy + "), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
           "  da" + s + " = f32[256,4096] dot(" + dy + ", w2" + s + "), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
           "  zs" + s + " = f32[256,4096] broadcast(z), dimensions={}\n"
           "  on" + s + " = pred[256,4096] compare(a" + s + ", zs" + s + "), direction=GT\n"
           "  zd" + s + " = f32[256,4096] broadcast(z), dimensions={}\n"
           "  dh" + s + " = f32[256,4096] select(on" + s + ", da" + s + ", zd" + s + ")\n"
           "  g1" + s + " = f32[1024,4096] dot(x" + s + ", dh" + s + "), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
           "  dx" + s + " = f32[256,1024] dot(dh" + s + ", w1" + s + "), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
           "  g13" + s + " = f32[1,1024,4096] reshape(g1" + s + ")\n"
           "  g1s" + s + " = f32[4,1024,4096] dynamic-update-slice(" + g1s + ", g13" + s + ", " + k + ", zero, zero)\n"
           "  g23" + s + " = f32[1,4096,1024] reshape(g2" + s + ")\n"
           "  g2s" + s + " = f32[4,4096,1024] dynamic-update-slice(" + g2s + ", g23" + s + ", " + k + ", zero, zero)\n";
  b.dx = "dx" + s;
  b.g1s = "g1s" + s;
  b.g2s = "g2s" + s;
  return b;
}

const std::string kStepParams =
    kParams + "  dy = f32[256,1024] parameter(3), sharding={replicated}\n"
              "  zero = s32[] constant(0)\n  z = f32[] constant(0)\n"
              "  acts0 = f32[4,256,4096] broadcast(z), dimensions={}\n"
              "  ins0 = f32[4,256,1024] broadcast(z), dimensions={}\n"
              "  g1s0 = f32[4,1024,4096] broadcast(z), dimensions={}\n"
              "  g2s0 = f32[4,4096,1024] broadcast(z), dimensions={}\n";
// The SGD update and the outputs (the weights as they came in, the loss gradient replicated).
std::string sgd(const std::string& g1s, const std::string& g2s, const std::string& y, const std::string& dx) {
  return "  lr = f32[] constant(0.01)\n"
         "  l1 = f32[4,1024,4096] broadcast(lr), dimensions={}\n  u1 = f32[4,1024,4096] multiply(l1, " + g1s + ")\n"
         "  n1 = f32[4,1024,4096] subtract(w1s, u1)\n"
         "  l2 = f32[4,4096,1024] broadcast(lr), dimensions={}\n  u2 = f32[4,4096,1024] multiply(l2, " + g2s + ")\n"
         "  n2 = f32[4,4096,1024] subtract(w2s, u2)\n"
         "  ROOT out = (f32[4,1024,4096], f32[4,4096,1024], f32[256,1024], f32[256,1024]) tuple(n1, n2, " + y + ", " + dx + "), "
         "sharding={{devices=[1,1,4]0,1,2,3}, {devices=[1,4,1]0,1,2,3}, {replicated}, {replicated}}\n}\n";
}

std::string scan_step_module() {
  const std::string fs = "(s32[], f32[256,1024], f32[4,1024,4096], f32[4,4096,1024], f32[4,256,4096], f32[4,256,1024])";
  const std::string bs = "(s32[], f32[256,1024], f32[4,1024,4096], f32[4,4096,1024], f32[4,256,4096], f32[4,256,1024], "
                         "f32[4,1024,4096], f32[4,4096,1024])";
  auto gte = [](const std::string& name, const std::string& shape, int k) {
    return "  " + name + " = " + shape + " get-tuple-element(p), index=" + std::to_string(k) + "\n";
  };
  auto cond = [](const std::string& name, const std::string& st) {
    return name + " {\n  p = " + st + " parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
           "  n = s32[] constant(4)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n";
  };
  const std::string head = "  zero = s32[] constant(0)\n  z = f32[] constant(0)\n  one = s32[] constant(1)\n  next = s32[] add(i, one)\n";
  const Fwd f = fwd_layer("", "i", "x", "acts_in", "ins_in");
  const Bwd b = bwd_layer("", "k", "dy", "acts", "ins", "g1s_in", "g2s_in");
  return "HloModule scan_step, num_partitions=4\n" + cond("fcond", fs) + cond("bcond", bs) +
         "fbody {\n  p = " + fs + " parameter(0)\n" + gte("i", "s32[]", 0) + gte("x", "f32[256,1024]", 1) +
         gte("w1s", "f32[4,1024,4096]", 2) + gte("w2s", "f32[4,4096,1024]", 3) + gte("acts_in", "f32[4,256,4096]", 4) +
         gte("ins_in", "f32[4,256,1024]", 5) + head + f.text +
         "  ROOT r = " + fs + " tuple(next, " + f.y + ", w1s, w2s, " + f.acts + ", " + f.ins + ")\n}\n"
         "bbody {\n  p = " + bs + " parameter(0)\n" + gte("i", "s32[]", 0) + gte("dy", "f32[256,1024]", 1) +
         gte("w1s", "f32[4,1024,4096]", 2) + gte("w2s", "f32[4,4096,1024]", 3) + gte("acts", "f32[4,256,4096]", 4) +
         gte("ins", "f32[4,256,1024]", 5) + gte("g1s_in", "f32[4,1024,4096]", 6) + gte("g2s_in", "f32[4,4096,1024]", 7) + head +
         "  last = s32[] constant(3)\n  k = s32[] subtract(last, i)\n" + b.text +
         "  ROOT r = " + bs + " tuple(next, " + b.dx + ", w1s, w2s, acts, ins, " + b.g1s + ", " + b.g2s + ")\n}\n"
         "ENTRY main {\n" + kStepParams + "  c0 = s32[] constant(0)\n"
         "  ft = " + fs + " tuple(c0, x, w1s, w2s, acts0, ins0)\n"
         "  fw = " + fs + " while(ft), condition=fcond, body=fbody\n"
         "  y = f32[256,1024] get-tuple-element(fw), index=1\n"
         "  acts = f32[4,256,4096] get-tuple-element(fw), index=4\n"
         "  ins = f32[4,256,1024] get-tuple-element(fw), index=5\n"
         "  bt = " + bs + " tuple(c0, dy, w1s, w2s, acts, ins, g1s0, g2s0)\n"
         "  bw = " + bs + " while(bt), condition=bcond, body=bbody\n"
         "  dx = f32[256,1024] get-tuple-element(bw), index=1\n"
         "  g1s = f32[4,1024,4096] get-tuple-element(bw), index=6\n"
         "  g2s = f32[4,4096,1024] get-tuple-element(bw), index=7\n" + sgd("g1s", "g2s", "y", "dx");
}

std::string unrolled_step_module() {
  std::string s = "HloModule unrolled_step, num_partitions=4\nENTRY main {\n" + kStepParams;
  std::string x = "x", acts = "acts0", ins = "ins0", dy = "dy", g1s = "g1s0", g2s = "g2s0";
  for (int k = 0; k < kLayers; ++k) {
    const std::string ks = std::to_string(k);
    s += "  i" + ks + " = s32[] constant(" + ks + ")\n";
    const Fwd f = fwd_layer("_f" + ks, "i" + ks, x, acts, ins);
    s += f.text;
    x = f.y, acts = f.acts, ins = f.ins;
  }
  for (int k = kLayers - 1; k >= 0; --k) {
    const std::string ks = std::to_string(k);  // apart: "_b" + to_string(k) trips GCC 12's false -Wrestrict
    const Bwd b = bwd_layer("_b" + ks, "i" + ks, dy, acts, ins, g1s, g2s);
    s += b.text;
    dy = b.dx, g1s = b.g1s, g2s = b.g2s;
  }
  return s + sgd(g1s, g2s, x, dy);
}

// The training step's loops partitioned as the unrolled step is: the stacked activations and
// gradients carried tiled (their zeros sliced once before the loop), no gather, one all-reduce per
// layer each way; the same device time within 3%.
TEST(HloSpmdCalls, ScanTrainingStepAsUnrolled) {
  const SpmdResult scan = partition(scan_step_module());
  ASSERT_TRUE(scan.module) << scan.report.reason;
  EXPECT_TRUE(scan.report.unmodelled.empty()) << scan.report.unmodelled.front().reason;
  EXPECT_EQ(scan.report.collectives.count("all-gather"), 0u);
  EXPECT_EQ(scan.report.collectives.at("all-reduce").count, 2);  // one in each body's text
  EXPECT_EQ(scan.report.local_slices, 3);  // the zeros of the activation and the two gradient stacks
  const Computation& fb = *scan.module->find("fbody");
  const Computation& bb = *scan.module->find("bbody");
  EXPECT_EQ(inst(fb, "acts").shape.dims, (std::vector<int64_t>{4, 256, 1024}));
  EXPECT_EQ(inst(bb, "g1s").shape.dims, (std::vector<int64_t>{4, 1024, 1024}));
  EXPECT_EQ(inst(bb, "g2s").shape.dims, (std::vector<int64_t>{4, 1024, 1024}));
  EXPECT_EQ(fb.root_instruction().name, "r");
  EXPECT_EQ(bb.root_instruction().name, "r");
  const SpmdResult flat = partition(unrolled_step_module());
  ASSERT_TRUE(flat.module) << flat.report.reason;
  EXPECT_EQ(flat.report.collectives.count("all-gather"), 0u);
  EXPECT_EQ(flat.report.collectives.at("all-reduce").count, 2 * kLayers);
  // The importer's approximations (select, dynamic-update-slice) are the same in both.
  const double a = device_time(*scan.module, 4, false), b = device_time(*flat.module, 4, false);
  const double whole = device_time(parse_hlo_module(scan_step_module(), "w.hlo()"), 4, false);
  EXPECT_NEAR(a / b, 1.0, 0.03) << "scan " << a << " s, unrolled " << b << " s";
  EXPECT_LT(a, 0.6 * whole);
  std::printf("[ figures  ] %d-layer MLP training step (scans) on 4 cores of v3-8: scanned %.2f us, unrolled %.2f us, "
              "the loops as written on every core %.2f us\n", kLayers, a * 1e6, b * 1e6, whole * 1e6);
}

// A gradient accumulator that enters the loop replicated (zeros) and is summed with column-sharded
// products is carried sharded: one local slice before the loop, none per iteration, no gather.
TEST(HloSpmdCalls, AccumulatorCarriedSharded) {
  const std::string st = "(s32[], f32[1024,4096], f32[256,1024], f32[256,4096])";
  const SpmdResult r = partition("HloModule acc, num_partitions=4\n"
                                 "body {\n  p = " + st + " parameter(0)\n"
                                 "  i = s32[] get-tuple-element(p), index=0\n"
                                 "  g = f32[1024,4096] get-tuple-element(p), index=1\n"
                                 "  x = f32[256,1024] get-tuple-element(p), index=2\n"
                                 "  dy = f32[256,4096] get-tuple-element(p), index=3\n"
                                 "  d = f32[1024,4096] dot(x, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
                                 "  s = f32[1024,4096] add(g, d)\n"
                                 "  one = s32[] constant(1)\n  next = s32[] add(i, one)\n"
                                 "  ROOT r = " + st + " tuple(next, s, x, dy)\n}\n"
                                 "cond {\n  p = " + st + " parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n"
                                 "  n = s32[] constant(8)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
                                 "ENTRY main {\n"
                                 "  x = f32[256,1024] parameter(0), sharding={replicated}\n"
                                 "  dy = f32[256,4096] parameter(1), sharding={devices=[1,4]0,1,2,3}\n"
                                 "  c0 = s32[] constant(0)\n  z = f32[] constant(0)\n"
                                 "  zeros = f32[1024,4096] broadcast(z), dimensions={}\n"
                                 "  t = " + st + " tuple(c0, zeros, x, dy)\n"
                                 "  w = " + st + " while(t), condition=cond, body=body\n"
                                 "  ROOT g = f32[1024,4096] get-tuple-element(w), index=1\n}\n");
  ASSERT_TRUE(r.module) << r.report.reason;
  EXPECT_TRUE(r.report.collectives.empty());
  EXPECT_EQ(r.report.local_slices, 1);
  const Computation& body = *r.module->find("body");
  EXPECT_EQ(inst(body, "s").shape.dims, (std::vector<int64_t>{1024, 1024}));
  EXPECT_EQ(body.root_instruction().name, "r");
  EXPECT_EQ(entry_inst(*r.module, "g").shape.dims, (std::vector<int64_t>{1024, 1024}));
  EXPECT_GT(device_time(*r.module, 4), 0);
}

// call (inline-equivalent) and conditional (each branch; the second's result resharded to the
// first's) partition their computations; a computation called twice with the same tilings is one
// version.
TEST(HloSpmdCalls, CallAndConditional) {
  const SpmdResult r = partition(R"(HloModule cc, num_partitions=4
mlp {
  x = f32[256,1024] parameter(0)
  w = f32[1024,4096] parameter(1)
  ROOT h = f32[256,4096] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
keep {
  p = f32[256,4096] parameter(0)
  ROOT e = f32[256,4096] exponential(p)
}
whole {
  p = f32[256,4096] parameter(0)
  ROOT g = f32[256,4096] custom-call(p), custom_call_target="Sharding", sharding={replicated}
}
ENTRY main {
  x = f32[256,1024] parameter(0), sharding={replicated}
  w = f32[1024,4096] parameter(1), sharding={devices=[1,4]0,1,2,3}
  b = pred[] parameter(2), sharding={replicated}
  h = f32[256,4096] call(x, w), to_apply=mlp
  h2 = f32[256,4096] call(x, w), to_apply=mlp
  s = f32[256,4096] add(h, h2)
  ROOT c = f32[256,4096] conditional(b, s, s), true_computation=keep, false_computation=whole
})");
  ASSERT_TRUE(r.module) << r.report.reason;
  EXPECT_TRUE(r.report.unmodelled.empty()) << r.report.unmodelled.front().reason;
  const Module& m = *r.module;
  EXPECT_EQ(inst(*m.find("mlp"), "h").shape.dims, (std::vector<int64_t>{256, 1024}));
  EXPECT_EQ(entry_inst(m, "h").called, entry_inst(m, "h2").called);
  EXPECT_EQ(entry_inst(m, "c").shape.dims, (std::vector<int64_t>{256, 1024}));
  // The false branch gathers (its constraint) and slices back to the first branch's tiling.
  EXPECT_EQ(r.report.collectives.at("all-gather").count, 1);
  EXPECT_EQ(m.find("whole")->root_instruction().shape.dims, (std::vector<int64_t>{256, 1024}));
  ImportOptions io;
  io.replicas = 4;
  const HloImport imp = import_hlo(m, io);
  ASSERT_EQ(imp.stats.unmodelled.size(), 1u);  // the importer's own note: which branch runs is not known
  EXPECT_EQ(imp.stats.unmodelled[0].opcode, "conditional");
}

// A weight gradient (the batch, its contracting dimension, data-parallel) wanted sharded like
// its weight (ZeRO / FSDP): one reduce-scatter, a quarter of the all-reduce's result bytes, where the
// partitioner would all-reduce and slice; an all-reduce also used whole is kept.
TEST(HloSpmdCalls, ReduceScatter) {
  const std::string text = R"(HloModule rs, num_partitions=4
ENTRY main {
  x = f32[512,1024] parameter(0), sharding={devices=[4,1]0,1,2,3}
  dy = f32[512,2048] parameter(1), sharding={devices=[4,1]0,1,2,3}
  ROOT g = f32[1024,2048] dot(x, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}, sharding={devices=[4,1]0,1,2,3}
})";
  const SpmdResult r = partition(text);
  ASSERT_TRUE(r.module) << r.report.reason;
  ASSERT_EQ(r.report.collectives.size(), 1u);
  const SpmdCollectiveStats& rs = r.report.collectives.at("reduce-scatter");
  EXPECT_EQ(rs.count, 1);
  EXPECT_EQ(rs.result_bytes, 256u * 2048 * 4);
  EXPECT_EQ(r.report.local_slices, 0);
  const Instruction& root = r.module->entry_computation().root_instruction();
  EXPECT_EQ(root.opcode, "reduce-scatter");
  EXPECT_EQ(root.shape.dims, (std::vector<int64_t>{256, 2048}));
  EXPECT_EQ(root.attr("dimensions")->value, "{0}");
  EXPECT_EQ(root.attr("replica_groups")->value, "{{0,1,2,3}}");
  EXPECT_EQ(r.module->entry_computation().instructions.size(), 4u);  // x, dy, the dot, the reduce-scatter
  const SpmdResult two = partition(text, 2);
  EXPECT_EQ(two.module->entry_computation().root_instruction().attr("replica_groups")->value, "{{0,1,2,3},{4,5,6,7}}");
  ImportOptions io;
  io.replicas = 4;
  const HloImport imp = import_hlo(*r.module, io);
  EXPECT_TRUE(imp.stats.unmodelled.empty()) << imp.stats.unmodelled.front().reason;
  // The same gradient all-reduced (wanted replicated): every partition receives all of it.
  std::string whole = text;
  whole.replace(whole.rfind("sharding={devices=[4,1]0,1,2,3}"), 31, "sharding={replicated}");
  const SpmdResult ar = partition(whole);
  ASSERT_TRUE(ar.module);
  EXPECT_EQ(ar.report.collectives.at("all-reduce").result_bytes, 1024u * 2048 * 4);
  const double t_rs = device_time(*r.module, 4), t_ar = device_time(*ar.module, 4);
  EXPECT_LT(t_rs, 0.8 * t_ar);
  std::printf("[ figures  ] [1024,2048] f32 weight gradient over 4 cores of v3-8: reduce-scatter %.2f us, "
              "all-reduce %.2f us\n", t_rs * 1e6, t_ar * 1e6);
  // Used sharded and whole: the all-reduce stays (its result has two users).
  const SpmdResult both = partition(R"(HloModule rs2, num_partitions=4
ENTRY main {
  x = f32[512,1024] parameter(0), sharding={devices=[4,1]0,1,2,3}
  dy = f32[512,2048] parameter(1), sharding={devices=[4,1]0,1,2,3}
  g = f32[1024,2048] dot(x, dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  s = f32[1024,2048] custom-call(g), custom_call_target="Sharding", sharding={devices=[4,1]0,1,2,3}
  e = f32[1024,2048] exponential(g)
  ROOT t = (f32[1024,2048], f32[1024,2048]) tuple(s, e)
})");
  ASSERT_TRUE(both.module);
  EXPECT_EQ(both.report.collectives.count("reduce-scatter"), 0u);
  EXPECT_EQ(both.report.collectives.at("all-reduce").count, 1);
  EXPECT_EQ(both.report.local_slices, 1);
}

// A module XLA's partitioner already ran (per-partition shapes, an all-reduce it inserted outside
// any manual region; the parameters keep their sharding) runs as written; so does a dump named
// after the pass. A shard_map region's own collective does not count.
TEST(HloSpmdCalls, DetectsPartitionedDumps) {
  const std::string after = R"(HloModule jit_f, num_partitions=4
add_f {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
ENTRY main {
  x = f32[256,1024] parameter(0), sharding={replicated}
  w1 = f32[1024,1024] parameter(1), sharding={devices=[1,4]0,1,2,3}
  w2 = f32[1024,1024] parameter(2), sharding={devices=[4,1]0,1,2,3}
  h = f32[256,1024] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = f32[256,1024] dot(h, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT ar = f32[256,1024] all-reduce(y), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add_f
})";
  const SpmdResult r = partition(after);
  EXPECT_FALSE(r.report.partitioned);
  EXPECT_NE(r.report.reason.find("'ar' (all-reduce, line 13) is outside a manual region"), std::string::npos) << r.report.reason;
  EXPECT_TRUE(partition(after, 1, SpmdMode::kPartition).report.partitioned);
  std::string no_collective = after;
  no_collective.replace(no_collective.find("  ROOT ar"), std::string::npos, "  ROOT c = f32[256,1024] copy(y)\n}\n");
  EXPECT_TRUE(partition(no_collective).report.partitioned);
  EXPECT_FALSE(partition(no_collective, 1, SpmdMode::kAuto, "module_0001.jit_f.0042.spmd-partitioner.after_spmd-partitioning.txt")
                   .report.partitioned);
}

// The data module (also a fuzz seed): every called computation partitioned, the gradient a
// reduce-scatter, the loop's trip count still read by the importer.
TEST(HloSpmdCalls, DataModule) {
  const Module m = parse_hlo_file(std::string(TPUSIM_HLO_DATA) + "/spmd_calls.hlo");
  const SpmdResult r = spmd_partition(m);
  ASSERT_TRUE(r.module) << r.report.reason;
  EXPECT_TRUE(r.report.unmodelled.empty()) << r.report.unmodelled.front().reason;
  EXPECT_EQ(r.report.collectives.at("reduce-scatter").count, 1);
  EXPECT_EQ(r.report.collectives.count("all-gather"), 0u);
  EXPECT_EQ(inst(*r.module->find("body"), "h").shape.dims, (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(inst(*r.module->find("act"), "e").shape.dims, (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(entry_inst(*r.module, "g").shape.dims, (std::vector<int64_t>{16, 16}));  // the partial sums
  EXPECT_EQ(entry_inst(*r.module, "g.spmd_reduce-scatter").shape.dims, (std::vector<int64_t>{8, 16}));
  ImportOptions io;
  io.replicas = 2;
  const HloImport imp = import_hlo(*r.module, io);
  for (const Unmodelled& u : imp.stats.unmodelled) EXPECT_TRUE(u.opcode == "conditional" || u.opcode == "copy") << u.reason;
}

// The pass is total: on mutated modules with called computations (the data module, the scan
// training step) only HloError escapes, and the import of what it makes too.
TEST(HloSpmdCalls, TotalOnMutatedModules) {
  std::ifstream in(std::string(TPUSIM_HLO_DATA) + "/spmd_calls.hlo");
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(data.empty());
  const std::vector<std::string> opcodes = {"add", "dot", "while", "call", "conditional", "tuple", "get-tuple-element",
                                            "dynamic-slice", "dynamic-update-slice", "reshape", "reduce", "custom-call"};
  uint64_t seed = 2024;
  int partitioned = 0;
  for (const std::string& text : {data, scan_step_module()})
    for (int k = 0; k < 300; ++k) {
      const std::string t = testing::mutate(text, seed, opcodes);
      std::optional<Module> m;
      try {
        m = parse_hlo_module(t, "fuzz.hlo");
      } catch (const HloError&) {
        continue;
      }
      try {
        const SpmdResult r = spmd_partition(*m, {SpmdMode::kPartition, 1});
        partitioned += r.module.has_value();
        if (r.module) import_hlo(*r.module, {.max_instructions = 20000, .while_trip_count = std::nullopt, .replicas = std::nullopt});
      } catch (const HloError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << "mutation " << k << ": " << e.what() << "\n" << t;
        return;
      }
    }
  EXPECT_GT(partitioned, 100);
}

}  // namespace
}  // namespace tpusim::hlo
