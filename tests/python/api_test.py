"""The Python API (python/tpusim) against the tpusim binary: tpusim.run() and tpusim.sweep() must give
what `tpusim run` and `tpusim sweep` give for the same inputs, and fail like them.

Run by ctest (label python) with PYTHONPATH=build/python, TPUSIM_TEST_BIN (the binary) and
TPUSIM_TEST_SOURCE (the repository root) set by tests/python/CMakeLists.txt.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import _thread

import tpusim

BIN = os.environ["TPUSIM_TEST_BIN"]
SRC = os.environ["TPUSIM_TEST_SOURCE"]
MATMUL = os.path.join(SRC, "configs/workloads/kernel_matmul_512.yaml")
# kernel_matmul_512.yaml as a dict.
MATMUL_DICT = {"kind": "kernel", "kernel": "matmul", "shape": {"m": 512, "k": 512, "n": 512}, "dtype": "f32",
               "precision": "default"}


def cli(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def cli_report(*args):
    with tempfile.TemporaryDirectory() as d:
        p = cli("run", *args, "--out", d, "--quiet")
        if p.returncode != 0:
            raise AssertionError(p.stderr)
        with open(os.path.join(d, "report.json")) as f:
            return json.load(f)


def without_wall_times(report):
    # run.wall_time_s (host seconds per stage) is the only part that differs between two runs of the
    # same inputs.
    r = json.loads(json.dumps(report))
    r["run"].pop("wall_time_s")
    return r


class Run(unittest.TestCase):
    def test_report_equals_the_cli_report(self):
        # A kernel with both engines, by path, with an override: the dict is report.json's content,
        # also for a second run in the same process (one interpreter runs many simulations).
        for engine in tpusim.engines:
            with self.subTest(engine=engine):
                api = tpusim.run(workload=MATMUL, engine=engine, overrides={"hw.chip.core.clock_mhz": 700})
                again = tpusim.run(workload=MATMUL, engine=engine, overrides={"hw.chip.core.clock_mhz": 700})
                self.assertEqual(without_wall_times(again), without_wall_times(api))
                self.assertEqual(without_wall_times(api),
                                 without_wall_times(cli_report("--workload", MATMUL, "--engine", engine,
                                                               "--set", "hw.chip.core.clock_mhz=700")))

    def test_default_run_is_the_cli_default(self):
        api = tpusim.run()
        self.assertEqual(api["workload"]["kind"], "training")
        self.assertEqual(without_wall_times(api), without_wall_times(cli_report()))

    def test_training_args_is_the_cli_flag(self):
        # A Hugging Face workload with a TrainingArguments dump on top, capped at 2 steps.
        wl = os.path.join(SRC, "configs/workloads/bert_base_mrpc_v3-8_hf.yaml")
        args = os.path.join(SRC, "configs/workloads/hf_training_args.json")
        api = tpusim.run(workload=wl, training_args=args, overrides=["workload.steps=2"])
        self.assertIn("learning_rate", api["workload"]["ignored_keys"])
        self.assertEqual(without_wall_times(api),
                         without_wall_times(cli_report("--workload", wl, "--training-args", args,
                                                       "--set", "workload.steps=2")))

    def test_maxtext_args_is_the_cli_flag(self):
        args = ("model_name=llama3.1-8b per_device_batch_size=1 max_target_length=2048 ici_fsdp_parallelism=-1 "
                "remat_policy=custom decoder_layer_input=offload query_proj=offload steps=2 base_num_decoder_layers=2")
        api = tpusim.run(hw="v6e-8", maxtext_args=args)
        self.assertIn("remat_policy: custom", api["config"]["workload_yaml"])
        self.assertGreater(api["summary"]["host_offload"]["host_memory_bytes"], 0)
        self.assertEqual(without_wall_times(api),
                         without_wall_times(cli_report("--hw", "v6e-8", "--maxtext-args", args)))

    def test_dict_and_embedded_name_equal_the_file(self):
        # The same run apart from where the configs came from (a dict's workload name defaults to
        # "<workload dict>", as a file's to its stem: name it to compare).
        by_file = without_wall_times(tpusim.run(workload=MATMUL, engine="analytical"))
        by_dict = without_wall_times(tpusim.run(workload=dict(MATMUL_DICT, name="kernel_matmul_512"), engine="analytical"))
        by_name = without_wall_times(tpusim.run(hw="v3-8", workload="kernel_matmul_512", engine="analytical"))
        self.assertEqual(by_dict["run"].pop("workload_file"), "<workload dict>")
        self.assertEqual(by_name["run"].pop("workload_file"), "(embedded) configs/workloads/kernel_matmul_512.yaml")
        self.assertEqual(by_name["run"].pop("hw_file"), "(embedded) configs/hw/v3-8.yaml")
        self.assertEqual(by_file["run"].pop("workload_file"), MATMUL)
        by_dict["run"].pop("hw_file")
        by_file["run"].pop("hw_file")
        self.assertEqual(by_dict, by_file)
        self.assertEqual(by_name, by_file)

    def test_a_hardware_dict_with_an_include(self):
        # configs/hw/v3-8.yaml as a dict: `include:` resolves against the embedded chip files and the
        # run equals the file's.
        v3_8 = {"name": "v3-8", "chip": {"include": "chips/tpu_v3.yaml"},
                "slice": {"topology": {"dims": [2, 2], "wraparound": [False, False]}, "hosts": 1,
                          "chips_per_host": 4},
                "host": {"cpus": 96, "ram_gib": 317, "cpu_ghz": 2.0, "reference_cpu_ghz": 2.0,
                         "trace_s_per_node": 1.9e-5, "step_overhead_s": 0.005, "compile_base_s": 0.3,
                         "compile_s_per_hlo_op": 3.0e-4, "compile_s_per_kernel": 5.0e-3,
                         "program_load_s": 0.05, "process_ram_gib": 0.5}}
        by_dict = without_wall_times(tpusim.run(hw=v3_8, workload=MATMUL, engine="analytical"))
        by_file = without_wall_times(tpusim.run(hw=os.path.join(SRC, "configs/hw/v3-8.yaml"), workload=MATMUL,
                                                engine="analytical"))
        self.assertEqual(by_dict["run"].pop("hw_file"), "<hw dict>")
        by_file["run"].pop("hw_file")
        self.assertEqual(by_dict, by_file)

    def test_overrides_dict_and_list_agree_and_change_the_run(self):
        base = tpusim.run(workload=MATMUL_DICT, engine="analytical")
        as_dict = tpusim.run(workload=MATMUL_DICT, engine="analytical", overrides={"workload.shape.m": 1024})
        as_list = tpusim.run(workload=MATMUL_DICT, engine="analytical", overrides=["workload.shape.m=1024"])
        self.assertEqual(without_wall_times(as_dict), without_wall_times(as_list))
        self.assertEqual(as_dict["summary"]["flops"], 2 * base["summary"]["flops"])

    def test_out_writes_the_returned_report_and_prints_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            code = ("import json, tpusim; r = tpusim.run(workload=%r, engine='analytical', out=%r); "
                    "assert r == json.load(open(%r))" % (MATMUL, d, os.path.join(d, "report.json")))
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, "")
            p = subprocess.run([sys.executable, "-c", code.replace("out=", "verbose=True, out=")],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            # verbose=True: the CLI's summary, ending with where the report went.
            self.assertIn("report     %s\n" % os.path.join(d, "report.json"), p.stdout)


class Errors(unittest.TestCase):
    def assert_cli_error(self, kwargs, cli_args, exit_code):
        with self.assertRaises(tpusim.Error) as cm:
            tpusim.run(**kwargs)
        p = cli("run", *cli_args)
        self.assertEqual(cm.exception.exit_code, exit_code)
        self.assertEqual(p.returncode, exit_code)
        self.assertEqual(cm.exception.message, p.stderr.rstrip("\n"))
        self.assertEqual(str(cm.exception), cm.exception.message)
        return cm.exception

    def test_bad_key_is_the_cli_error(self):
        e = self.assert_cli_error({"workload": MATMUL, "overrides": {"workload.shap.m": 8}},
                                  ["--workload", MATMUL, "--set", "workload.shap.m=8"], 2)
        self.assertIsInstance(e, tpusim.InputError)

    def test_missing_file_and_bad_engine_are_the_cli_errors(self):
        self.assert_cli_error({"workload": "no/such.yaml"}, ["--workload", "no/such.yaml"], 2)
        self.assert_cli_error({"workload": MATMUL, "engine": "sytemc"}, ["--workload", MATMUL, "--engine", "sytemc"], 2)

    def test_a_simulation_error_is_exit_3(self):
        # A core with 1 MiB of VMEM cannot run the encoder block: it fails on the simulated hardware.
        block = os.path.join(SRC, "configs/workloads/kernel_encoder_block_512x1024.yaml")
        e = self.assert_cli_error({"workload": block, "overrides": {"hw.chip.core.vmem.size_mib": 1}},
                                  ["--workload", block, "--set", "hw.chip.core.vmem.size_mib=1"], 3)
        self.assertIsInstance(e, tpusim.SimulationError)

    def test_a_bad_dict_names_its_origin_and_yaml_path(self):
        with self.assertRaises(tpusim.InputError) as cm:
            tpusim.run(workload=dict(MATMUL_DICT, shape={"m": 512, "k": 512, "n": 0}))
        self.assertIn("<workload dict>", cm.exception.message)
        self.assertIn("shape.n", cm.exception.message)


class Sweep(unittest.TestCase):
    SWEEP = {"hw": os.path.join(SRC, "configs/hw/v3-8.yaml"), "workload": MATMUL, "engine": "analytical",
             "axes": [{"path": "workload.shape.m", "values": [256, 512, 1024]}]}

    def test_rows_are_the_results_file(self):
        with tempfile.TemporaryDirectory() as d:
            rows = tpusim.sweep(self.SWEEP, jobs=2, out=d)
            with open(os.path.join(d, "results.csv")) as f:
                lines = f.read().splitlines()
        self.assertEqual(len(rows), 3)
        self.assertEqual(list(rows[0]), lines[0].split(","))
        self.assertEqual([r["status"] for r in rows], ["ok"] * 3)
        self.assertEqual([r["point"] for r in rows], [0, 1, 2])
        flops = [r["flops"] for r in rows]
        self.assertEqual(flops, [flops[0], 2 * flops[0], 4 * flops[0]])

    def test_a_failed_point_is_a_row_and_bad_input_raises(self):
        bad = dict(self.SWEEP, axes=[{"path": "workload.shape.m", "values": [512, 0]}])
        rows = tpusim.sweep(bad, jobs=1, overrides={"workload.shape.n": 256})
        self.assertEqual([r["status"] for r in rows], ["ok", "failed"])
        self.assertEqual(rows[1]["exit_code"], 2)
        with self.assertRaises(tpusim.InputError) as cm:
            tpusim.sweep(dict(self.SWEEP, axis=[]))
        self.assertIn("<sweep dict>", cm.exception.message)

    def test_a_missing_binary_is_a_clear_error(self):
        old = os.environ.get("TPUSIM_BIN")
        os.environ["TPUSIM_BIN"] = "/nonexistent/tpusim"
        try:
            with self.assertRaises(tpusim.InputError) as cm:
                tpusim.sweep(self.SWEEP)
            self.assertIn("TPUSIM_BIN", cm.exception.message)
        finally:
            if old is None:
                del os.environ["TPUSIM_BIN"]
            else:
                os.environ["TPUSIM_BIN"] = old

    def test_keyboard_interrupt_kills_the_points(self):
        # 8 training points on the SystemC engine, about 1.5 s each (6 s with 2 jobs); Ctrl-C a second in.
        slow = {"hw": os.path.join(SRC, "configs/hw/v3-8.yaml"),
                "workload": os.path.join(SRC, "configs/workloads/bert_base_mrpc_v3-8.yaml"), "engine": "systemc",
                "axes": [{"path": "workload.per_device_batch_size", "values": [1, 2, 3, 4, 5, 6, 7, 8]}]}
        timer = threading.Timer(1.0, _thread.interrupt_main)
        timer.start()
        t0 = time.monotonic()
        try:
            with self.assertRaises(KeyboardInterrupt):
                tpusim.sweep(slow, jobs=2)
        finally:
            timer.cancel()
        self.assertLess(time.monotonic() - t0, 3)
        children = []
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                        children.append(pid)
            except (OSError, ValueError, IndexError):
                pass
        self.assertEqual(children, [])


class Module(unittest.TestCase):
    def test_version_engines_and_names(self):
        self.assertEqual("tpusim " + tpusim.version, cli("--version").stdout.strip())
        self.assertEqual(sorted(tpusim.engines), ["analytical", "systemc"])
        self.assertIn("v3-8", tpusim.hw_names())
        self.assertNotIn("tpu_v3", tpusim.hw_names())  # chip files are not slices
        self.assertIn("bert_base_mrpc_v3-8", tpusim.workload_names())
        self.assertIn("kernel_matmul_512", tpusim.workload_names())


if __name__ == "__main__":
    unittest.main()
