// tpusim._core: the C++ side of the Python package (python/tpusim/__init__.py holds the public API
// and turns dicts into text). A run is app::run_core(), the path of `tpusim run`; a sweep is
// sweep::run_sweep(), the path of `tpusim sweep`. Failures become tpusim.Error with the CLI's exit
// code and stderr line (app::describe_failure()).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/run_core.h"
#include "sim/engine/engine.h"
#include "sweep/plan.h"
#include "sweep/results.h"
#include "sweep/run_sweep.h"
#include "sweep/sweep_config.h"

namespace py = pybind11;

namespace tpusim::app {
namespace {

// Raises the package's exception for a failure (tpusim._make_error picks the subclass).
[[noreturn]] void raise(const Failure& f) {
  const py::object err = py::module_::import("tpusim").attr("_make_error")(f.exit_code, f.message);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
  throw py::error_already_set();
}

// A config source from the Python side: None (the embedded default), {"path": P}, {"name": N} (an
// embedded config) or {"text": T, "origin": O}.
struct Source {
  std::string path;
  std::optional<ConfigText> text;
};

Source source(const py::object& spec, const std::string& kind) {
  Source s;
  if (spec.is_none()) return s;
  const py::dict d = spec.cast<py::dict>();
  if (d.contains("path")) {
    s.path = d["path"].cast<std::string>();
  } else if (d.contains("name")) {
    s.text = embedded_config(kind, d["name"].cast<std::string>());
    if (!s.text) throw std::logic_error("no embedded " + kind + " config " + d["name"].cast<std::string>());
  } else {
    ConfigText t;
    t.text = d["text"].cast<std::string>();
    t.origin = d["origin"].cast<std::string>();
    // A hardware dict read from a shipped slice file keeps its `include: chips/...` working.
    t.embedded_includes = kind == "hw";
    s.text = t;
  }
  return s;
}

// A JSON value as the Python object json.loads gives for its text in report.json (write_report():
// non-finite numbers written as null, invalid UTF-8 replaced), built directly: printing the report
// and parsing it again took a third of an in-process kernel run. Objects keep the key order of the
// text (sorted).
py::object to_python(const nlohmann::json& j) {
  using T = nlohmann::json::value_t;
  auto str = [](const std::string& s) {
    return py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(s.data(), py::ssize_t(s.size()), "replace"));
  };
  switch (j.type()) {
    case T::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[str(k)] = to_python(v);
      return d;
    }
    case T::array: {
      py::list l(j.size());
      for (size_t i = 0; i < j.size(); ++i) l[i] = to_python(j[i]);
      return l;
    }
    case T::string:
      return str(j.get_ref<const std::string&>());
    case T::boolean:
      return py::bool_(j.get<bool>());
    case T::number_integer:
      return py::int_(j.get<int64_t>());
    case T::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case T::number_float: {
      const double v = j.get<double>();
      return std::isfinite(v) ? py::object(py::float_(v)) : py::object(py::none());
    }
    default:
      return py::none();
  }
}

// Returns (report.json's content, what `tpusim run` would print).
py::tuple py_run(const py::object& hw, const py::object& workload, const std::vector<std::string>& sets,
              const std::string& engine, const std::string& out_dir, bool trace, bool full_sim, bool verbose,
              const std::string& training_args, const std::string& maxtext_args) {
  RunArgs a;
  RunSources sources;
  const Source h = source(hw, "hw"), w = source(workload, "workload");
  a.hw_file = h.path;
  a.workload_file = w.path;
  sources.hw = h.text;
  sources.workload = w.text;
  a.sets = sets;
  a.engine = engine;
  a.out_dir = out_dir;
  a.trace = trace;
  a.full_sim = full_sim;
  a.quiet = !verbose;
  a.training_args_file = training_args;
  a.maxtext_args = maxtext_args;
  RunOutput out;
  std::optional<Failure> failure;
  {
    // The simulation touches no Python object: other Python threads may run meanwhile.
    py::gil_scoped_release nogil;
    try {
      out = run_core(a, sources, true);
    } catch (...) {
      failure = describe_failure(std::current_exception());
    }
  }
  if (failure) raise(*failure);
  return py::make_tuple(to_python(out.report), out.text);
}

// The tpusim binary that runs sweep points: TPUSIM_BIN, else the one built beside this module.
std::string tpusim_binary() {
  const char* env = std::getenv("TPUSIM_BIN");
  const bool from_env = env && *env;
  const std::string path = from_env ? env : TPUSIM_BINARY_PATH;
  if (::access(path.c_str(), X_OK) != 0)
    throw input_error(from_env ? "TPUSIM_BIN" : "tpusim binary", "is not an executable file", path,
                      "build it (cmake --build --preset default) or set TPUSIM_BIN to the tpusim binary");
  return path;
}

// Runs a sweep; returns (columns, the rows as JSON: a list of value lists in column order).
py::tuple py_sweep(const py::dict& spec, unsigned jobs, const std::string& out_dir, const std::vector<std::string>& sets,
                bool resume, bool verbose) {
  try {
    sweep::PlanOptions po;
    po.extra_sets = sets;
    const sweep::SweepPlan plan =
        spec.contains("path")
            ? (require_file(spec["path"].cast<std::string>()), sweep::plan_sweep(spec["path"].cast<std::string>(), po))
            : sweep::plan_sweep(sweep::load_sweep_config_text(spec["text"].cast<std::string>(),
                                                              spec["origin"].cast<std::string>()),
                                po);
    sweep::SweepRunOptions opt;
    opt.tpusim = tpusim_binary();
    opt.jobs = jobs;
    opt.out_dir = out_dir;
    opt.resume = resume;
    opt.plots = false;  // a notebook draws its own
    opt.quiet = !verbose;
    // Ctrl-C (or another thread's interrupt_main) raises KeyboardInterrupt here, which kills the
    // running points (ProcessPool) and propagates. Other Python threads run meanwhile.
    opt.poll = [] {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    };
    const sweep::SweepRunSummary sum = [&] {
      py::gil_scoped_release nogil;
      return sweep::run_sweep(plan, opt);
    }();
    sweep::ojson rows = sweep::ojson::array();
    for (const auto& r : sweep::read_records(sum.out_dir)) rows.push_back(sweep::record_values(r, plan.columns));
    return py::make_tuple(plan.columns, rows.dump(-1, ' ', false, sweep::ojson::error_handler_t::replace));
  } catch (const py::error_already_set&) {
    throw;
  } catch (...) {
    raise(describe_failure(std::current_exception()));
  }
}

}  // namespace
}  // namespace tpusim::app

PYBIND11_MODULE(_core, m) {
  m.doc() = "tpusim's C++ core; use the tpusim package (docs/python.md)";
  m.attr("version") = TPUSIM_VERSION;
  m.attr("engines") = tpusim::engine_names();
  m.attr("default_tpusim_binary") = TPUSIM_BINARY_PATH;
  m.def("run", &tpusim::app::py_run);
  m.def("sweep", &tpusim::app::py_sweep);
  m.def("embedded_names", &tpusim::app::embedded_config_names);
  m.def("embedded_text", [](const std::string& kind, const std::string& name) -> py::object {
    const auto c = tpusim::app::embedded_config(kind, name);
    return c ? py::object(py::str(c->text)) : py::object(py::none());
  });
}
