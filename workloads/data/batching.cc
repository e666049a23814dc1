#include "workloads/data/batching.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "config/suggest.h"

namespace tpusim::data {

// ---- Padding --------------------------------------------------------------------------------------

std::string PaddingSpec::to_string() const {
  switch (kind) {
    case Kind::kMaxLength: return "max_length";
    case Kind::kLongest: return "longest";
    case Kind::kMultipleOf: return "multiple_of:" + std::to_string(multiple);
  }
  return "?";
}

PaddingSpec parse_padding(std::string_view text, const ErrorWhere& where) {
  auto fail = [&](std::string rule, std::string suggestion) { throw where.error(std::string(text), std::move(rule), std::move(suggestion)); };
  if (text == "max_length") return PaddingSpec::max_length();
  if (text == "longest") return PaddingSpec::longest();
  constexpr std::string_view kPrefix = "multiple_of:";
  if (text.starts_with(kPrefix)) {
    const std::string_view m = text.substr(kPrefix.size());
    uint32_t v = 0;
    const auto [ptr, ec] = std::from_chars(m.data(), m.data() + m.size(), v);
    const bool digits = !m.empty() && std::all_of(m.begin(), m.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || ec != std::errc() || ptr != m.data() + m.size() || v == 0) {
      fail("must be multiple_of:M with M an integer >= 1 (tokens), e.g. multiple_of:32", "");
    }
    return PaddingSpec::multiple_of(v);
  }
  const std::vector<std::string> known = {"max_length", "longest", "multiple_of:M"};
  fail("is not a padding strategy", config::suggest(text, known, "known strategies"));
  return {};  // unreachable
}

uint32_t padded_length(const std::vector<uint32_t>& truncated_lengths, const PaddingSpec& padding, uint32_t max_length) {
  if (truncated_lengths.empty()) return 0;
  const uint32_t longest = *std::max_element(truncated_lengths.begin(), truncated_lengths.end());
  switch (padding.kind) {
    case PaddingSpec::Kind::kMaxLength:
      return max_length;
    case PaddingSpec::Kind::kLongest:
      return longest;
    case PaddingSpec::Kind::kMultipleOf: {
      // Capped at max_length: Hugging Face's tokenizer.pad() would round 100 up to 128 even with
      // max_length=100; when max_length is a multiple of M (128 with M = 8, 32, 64) the two agree.
      const uint64_t m = padding.multiple;
      const uint64_t rounded = (longest + m - 1) / m * m;
      return static_cast<uint32_t>(std::min<uint64_t>(rounded, max_length));
    }
  }
  return longest;
}

// ---- Options --------------------------------------------------------------------------------------

void validate(const LoaderOptions& o, const ErrorWhere& where) {
  auto fail = [&](const char* field, uint64_t value, std::string rule) {
    throw where.at(field).error(std::to_string(value), std::move(rule));
  };
  if (o.num_processes == 0) fail("num_processes", 0, "must be an integer >= 1 (one process per TPU device)");
  if (o.batch_size == 0) fail("batch_size", 0, "must be an integer >= 1 (examples)");
  if (o.gradient_accumulation_steps == 0) fail("gradient_accumulation_steps", 0, "must be an integer >= 1");
  if (o.max_length == 0) fail("max_length", 0, "must be an integer >= 1 (tokens)");
  if (o.padding.kind == PaddingSpec::Kind::kMultipleOf && o.padding.multiple == 0) {
    fail("padding", 0, "multiple_of:M needs M >= 1 (tokens)");
  }
  if (o.split_batches && o.batch_size % o.num_processes != 0) {
    // Accelerate raises the same in BatchSamplerShard.__init__.
    fail("batch_size", o.batch_size,
         "must be a multiple of num_processes (" + std::to_string(o.num_processes) +
             ") with split_batches: the global batch is split evenly across processes");
  }
}

// ---- Sharding -------------------------------------------------------------------------------------
//
// Source: accelerate/data_loader.py, BatchSamplerShard._iter_with_no_split / _iter_with_split
// (Accelerate 0.2x-1.x; prepare_data_loader uses it for DistributedType.XLA too, then wraps the loader
// in MpDeviceLoaderWrapper, which changes devices, not batches).
//
// split_batches=False: the wrapped BatchSampler yields per-process batches of b consecutive examples;
// batch i goes to process i % N, and a round of N batches is yielded only when its last batch is full.
// So in round r process p holds batch rN+p, i.e. positions [(rN+p)b, (rN+p+1)b) of the epoch order:
// the p-th contiguous slice of the global batch of G = N*b consecutive examples.
// split_batches=True: the wrapped BatchSampler yields global batches of G; process p takes
// batch[p*b : (p+1)*b] -- the same layout. The two modes differ only in what batch_size means.
//
// The last incomplete round (n % G = rem > 0):
//  * drop_last: BatchSampler drops the short batch and BatchSamplerShard drops the incomplete round.
//  * even_batches: the round is completed from `initial_data`, the first min(n, G) examples of the
//    epoch (the first N batches, or the first global batch), repeated if n < G; position q >= n of the
//    round takes order[(q - n) mod min(n, G)]. Every process gets b examples; G - rem duplicates.
//  * neither: process p gets positions [(rN+p)b, min((rN+p+1)b, n)) -- b, ..., b, a short one, then
//    nothing. E.g. MRPC (3668) at b=4, N=8: 4,4,4,4,4,0,0,0. Processes with nothing run one step fewer
//    (Accelerate's __len__ agrees); the simulator reports the step with B=0 and uneven_last_step.

namespace {

ProcessBatch make_batch(const Dataset& dataset, const std::vector<uint32_t>& order, uint64_t begin, uint64_t end,
                        uint64_t fill_period, const LoaderOptions& o) {
  const uint64_t n = order.size();
  ProcessBatch pb;
  for (uint64_t q = begin; q < end; ++q) {
    const bool fill = q >= n;
    const uint32_t ex = order[fill ? (q - n) % fill_period : q];
    if (ex >= dataset.size()) {
      throw std::invalid_argument("plan_epoch: order holds example " + std::to_string(ex) + " of a dataset of " +
                                  std::to_string(dataset.size()));
    }
    pb.examples.push_back(ex);
    pb.lengths.push_back(std::min(dataset.lengths()[ex], o.max_length));
    if (dataset.has_targets()) pb.target_lengths.push_back(std::min(dataset.target_lengths()[ex], o.max_target_length));
    pb.duplicates += fill ? 1 : 0;
  }
  pb.batch_size = static_cast<uint32_t>(pb.examples.size());
  pb.padded_length = padded_length(pb.lengths, o.padding, o.max_length);
  if (dataset.has_targets()) pb.target_padded_length = padded_length(pb.target_lengths, o.padding, o.max_target_length);
  for (uint32_t len : pb.lengths) pb.real_tokens += len;
  pb.padded_tokens = uint64_t{pb.batch_size} * pb.padded_length - pb.real_tokens;
  return pb;
}

}  // namespace

EpochCounts count_epoch(uint64_t n, const LoaderOptions& o, bool training) {
  validate(o);
  EpochCounts c;
  const uint64_t b = o.per_process_batch(), g = o.global_batch();
  const uint64_t full = n / g, rem = n % g;
  const bool partial = rem > 0 && !o.drop_last;
  c.steps = full + (partial ? 1 : 0);
  c.dropped = o.drop_last ? rem : 0;
  c.duplicates = partial && o.even_batches ? g - rem : 0;
  c.optimizer_steps = training ? (c.steps + o.gradient_accumulation_steps - 1) / o.gradient_accumulation_steps : 0;
  if (c.steps > 0) {
    for (uint64_t p = 0; p < o.num_processes; ++p) {
      const uint64_t have = partial && !o.even_batches ? std::min(b, rem - std::min(rem, p * b)) : b;
      c.last_step_batch_sizes.push_back(static_cast<uint32_t>(have));
    }
  }
  return c;
}

EpochPlan plan_epoch(const Dataset& dataset, const std::vector<uint32_t>& order, const LoaderOptions& o, bool training,
                     const ErrorWhere& where) {
  validate(o, where);
  EpochPlan plan;
  plan.options = o;
  plan.training = training;
  const uint64_t n = order.size();
  const uint64_t b = o.per_process_batch(), g = o.global_batch();
  const uint64_t full = n / g, rem = n % g;
  const bool partial = rem > 0 && !o.drop_last;
  const uint64_t rounds = full + (partial ? 1 : 0);
  const uint64_t fill_period = std::min(n, g);  // Accelerate's initial_data

  plan.examples = n;
  plan.dropped = o.drop_last ? rem : 0;
  plan.consumed = n - plan.dropped;
  plan.steps.reserve(rounds);
  for (uint64_t r = 0; r < rounds; ++r) {
    Step step;
    step.index = r;
    // Accelerate: GradientState.sync_gradients = (step % k == 0) or end_of_dataloader.
    step.sync = training && ((r + 1) % o.gradient_accumulation_steps == 0 || r + 1 == rounds);
    step.processes.reserve(o.num_processes);
    for (uint64_t p = 0; p < o.num_processes; ++p) {
      uint64_t begin = (r * o.num_processes + p) * b, end = begin + b;
      if (!o.even_batches) begin = std::min(begin, n), end = std::min(end, n);
      ProcessBatch pb = make_batch(dataset, order, begin, end, fill_period, o);
      plan.duplicates += pb.duplicates;
      plan.real_tokens += pb.real_tokens;
      plan.padded_tokens += pb.padded_tokens;
      plan.uneven_last_step |= pb.batch_size < b;
      step.processes.push_back(std::move(pb));
    }
    plan.optimizer_steps += step.sync ? 1 : 0;
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

EpochPlan plan_train_epoch(const Dataset& dataset, const LoaderOptions& options, uint64_t run_seed, uint64_t epoch,
                           const ErrorWhere& where) {
  return plan_epoch(dataset, epoch_order(dataset.size(), run_seed, epoch), options, true, where);
}

EpochPlan plan_eval(const Dataset& dataset, const LoaderOptions& train, uint32_t eval_batch_size, const ErrorWhere& where) {
  LoaderOptions o = train;
  o.batch_size = eval_batch_size;
  o.drop_last = false;
  o.gradient_accumulation_steps = 1;
  if (eval_batch_size == 0) throw where.at("eval_batch_size").error("0", "must be an integer >= 1 (examples)");
  return plan_epoch(dataset, sequential_order(dataset.size()), o, false, where);
}

// ---- Summaries -----------------------------------------------------------------------------------

std::set<Shape> distinct_shapes(const EpochPlan& plan, uint32_t process) {
  std::set<Shape> shapes;
  for (const Step& s : plan.steps) {
    if (process >= s.processes.size()) break;
    const ProcessBatch& pb = s.processes[process];
    if (pb.batch_size > 0) shapes.insert({pb.batch_size, pb.padded_length});
  }
  return shapes;
}

std::set<Shape> distinct_shapes(const EpochPlan& plan) {
  std::set<Shape> shapes;
  for (const Step& s : plan.steps) {
    for (const ProcessBatch& pb : s.processes) {
      if (pb.batch_size > 0) shapes.insert({pb.batch_size, pb.padded_length});
    }
  }
  return shapes;
}

std::set<uint32_t> distinct_padded_lengths(const EpochPlan& plan) {
  std::set<uint32_t> lengths;
  for (const Shape& s : distinct_shapes(plan)) lengths.insert(s.seq);
  return lengths;
}

double padding_waste(const EpochPlan& plan) {
  const uint64_t total = plan.total_tokens();
  return total == 0 ? 0.0 : static_cast<double>(plan.padded_tokens) / static_cast<double>(total);
}

}  // namespace tpusim::data
