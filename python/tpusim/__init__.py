"""tpusim from Python: run simulations and sweeps in a notebook (docs/python.md).

    import tpusim
    report = tpusim.run(workload="kernel_matmul_1024")
    report["device_time_s"]

tpusim.run() takes the path of `tpusim run` (the same C++ function) and returns the dict that
`tpusim run --out DIR` writes to DIR/report.json. Configs may be paths, names of the configs embedded
in the module (hw_names(), workload_names()) or dicts with the structure of the YAML files.
"""

import json
import os
import shutil
import sys
import tempfile

from . import _core

__all__ = ["run", "sweep", "hw_names", "workload_names", "Error", "InputError", "SimulationError",
           "InternalError", "version", "engines"]

version = _core.version
"""The tpusim version (as `tpusim --version` prints it)."""
engines = list(_core.engines)
"""The engine names `engine=` accepts (as --engine)."""


class Error(Exception):
    """A run or sweep that `tpusim` would end with a non-zero exit code.

    exit_code: 2 bad input, 3 the workload failed on the simulated hardware, 1 internal error.
    message: the line the CLI prints on stderr for the same input (e.g. "error: w.yaml:3: ...").
    """

    def __init__(self, exit_code, message):
        super().__init__(message)
        self.exit_code = exit_code
        self.message = message


class InputError(Error):
    """Bad input: a config, an override or an argument (exit code 2)."""


class SimulationError(Error):
    """The workload failed on the simulated hardware, e.g. out of HBM (exit code 3)."""


class InternalError(Error):
    """A bug in tpusim (exit code 1)."""


def _make_error(exit_code, message):
    # Called by _core for every failure.
    cls = {2: InputError, 3: SimulationError}.get(exit_code, InternalError)
    return cls(exit_code, message)


def hw_names():
    """Names of the hardware configs embedded in the module (configs/hw/NAME.yaml), e.g. "v3-8"."""
    return list(_core.embedded_names("hw"))


def workload_names():
    """Names of the workloads embedded in the module (configs/workloads/NAME.yaml)."""
    return list(_core.embedded_names("workload"))


def _source(value, kind):
    # None: the embedded default; a dict: YAML structure, as JSON text (JSON is YAML) named
    # "<workload dict>" in errors; a string: a file if one exists, else an embedded name, else a path
    # (so that the error is the CLI's "no such file").
    if value is None:
        return None
    if isinstance(value, dict):
        return {"text": json.dumps(value, indent=2), "origin": "<%s dict>" % kind}
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TypeError("%s must be a path, an embedded name or a dict, not %s" % (kind, type(value).__name__))
    if not os.path.exists(value) and _core.embedded_text(kind, value) is not None:
        return {"name": value}
    return {"path": value}


def _sets(overrides):
    # {"path.key": value} or ["path=value", ...]: the --set strings. Values are written as YAML
    # scalars (True -> true, None -> null); lists and dicts as JSON (flow YAML).
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        out = []
        for key, value in overrides.items():
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif value is None:
                text = "null"
            elif isinstance(value, (list, dict)):
                text = json.dumps(value)
            else:
                text = str(value)
            out.append("%s=%s" % (key, text))
        return out
    if isinstance(overrides, str):
        return [overrides]
    return [str(s) for s in overrides]


def _path(p):
    return "" if p is None else os.fspath(p)


def run(hw=None, workload=None, overrides=None, engine=None, out=None, trace=False, full_sim=False,
        verbose=False, training_args=None, maxtext_args=None):
    """Runs one simulation, like `tpusim run`; returns its report.json as a dict.

    hw, workload: a path, an embedded name (hw_names(), workload_names()) or a dict (the YAML's
        structure); None: the embedded defaults (v3-8, BERT-base on MRPC), as `tpusim run`.
    overrides: {"path.key": value} or ["path=value", ...], as --set.
    engine: "systemc" or "analytical" (tpusim.engines), as --engine; None: the workload's default.
    out: a directory to also write report.json (and trace.json with trace=True) to, as --out.
    full_sim: training workloads: simulate every step and every core, as --full-sim.
    verbose: print the summary `tpusim run` prints; otherwise nothing is printed.
    training_args: a Hugging Face training_args.json / Accelerate config file applied on top of the
        workload, as --training-args (docs/config-workload.md).
    maxtext_args: MaxText's train.py arguments, inline ("model_name=llama3.1-8b per_device_batch_size=1
        ...") or a file of them, as --maxtext-args; without a workload they start from MaxText's
        defaults.
    Raises tpusim.Error (InputError, SimulationError, InternalError) where the CLI exits non-zero.
    """
    report, text = _core.run(_source(hw, "hw"), _source(workload, "workload"), _sets(overrides),
                             engine or "", _path(out), bool(trace), bool(full_sim), bool(verbose),
                             _path(training_args), _path(maxtext_args))
    if verbose and text:
        sys.stdout.write(text)
    return report


def sweep(sweep, jobs=None, out=None, overrides=None, resume=False, verbose=False):
    """Runs a sweep, like `tpusim sweep`; returns its rows: one dict per point, keyed by the columns of
    the sweep's results.csv (point id, axis values, status, figures), in point order.

    sweep: a sweep YAML path or a dict of its structure (hw/workload paths in a dict are relative to
        the working directory; in a file, to the file).
    jobs: points run in parallel (default: the CPUs this process may use), as -j.
    out: the output directory (results.csv, results.jsonl, each point's report.json), as --out;
        None: a temporary directory, removed afterwards.
    overrides: applied to every point, as --set. resume: as --resume (needs out).
    Points run as child processes of the tpusim binary built with this module (TPUSIM_BIN overrides
    it). A failed point is a row with its status and error, not an exception; bad input raises
    tpusim.Error. Ctrl-C (KeyboardInterrupt) kills the running points.
    """
    if isinstance(sweep, dict):
        spec = {"text": json.dumps(sweep, indent=2), "origin": "<sweep dict>"}
    else:
        spec = {"path": os.fspath(sweep)}
    tmp = None
    if out is None:
        tmp = tempfile.mkdtemp(prefix="tpusim-sweep-")
    try:
        columns, rows = _core.sweep(spec, int(jobs or 0), tmp or os.fspath(out), _sets(overrides), bool(resume),
                                    bool(verbose))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return [dict(zip(columns, row)) for row in json.loads(rows)]
