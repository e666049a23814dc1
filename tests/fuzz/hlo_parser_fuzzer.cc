// libFuzzer target of the HLO text parser (compiler/hlo/): any input must parse or throw HloError /
// ConfigError (bad input), then every typed attribute reader runs on every instruction, and a module
// of more than one partition goes through the SPMD partitioner (compiler/hlo/hlo_spmd.h), which may
// only throw HloError. Anything else (a crash, a sanitizer report, another exception, a timeout) is a
// bug.
//
// Built with -DTPUSIM_FUZZ=ON and clang (tests/fuzz/CMakeLists.txt): libFuzzer supplies main(). Without
// it, the same file is linked with fuzz_replay.cc, a driver that feeds each file or directory given on
// the command line, which is how the ctest test runs it over the seed corpus tests/hlo/data.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_error.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/hlo/hlo_spmd.h"

namespace {

void read_attributes(const tpusim::hlo::Module& m) {
  using namespace tpusim::hlo;
  for (const Computation& c : m.computations)
    for (const Instruction& in : c.instructions) {
      try {
        for (const char* n : {"dimensions", "lhs_contracting_dims", "rhs_contracting_dims"}) int_list_attr(m, in, n);
        int_attr(m, in, "index");
        string_attr(m, in, "custom_call_target");
        slice_attr(m, in);
        padding_attr(m, in);
        window_attr(m, in);
        dim_labels_attr(m, in);
        dot_dims(m, in);
        replica_groups_attr(m, in);
        source_target_pairs_attr(m, in);
        direction_attr(m, in);
        sharding_attr(m, in);
        metadata_attr(m, in);
      } catch (const tpusim::ConfigError&) {
        // A malformed attribute value: bad input, reported.
      }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tpusim::hlo::Module m = tpusim::hlo::parse_hlo_module(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.hlo");
    read_attributes(m);
    // The partitioner reads every sharding, shape and tile assignment of the module (bounded: it
    // rewrites the ENTRY computation once).
    if (m.num_partitions > 1) tpusim::hlo::spmd_partition(m, {tpusim::hlo::SpmdMode::kPartition, 1});
  } catch (const tpusim::ConfigError&) {
  }
  return 0;
}
