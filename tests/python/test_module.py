"""The Python module, as a user drives it (ctest python.module; PYTHONPATH=build/python).

  test_module.py SOURCE_DIR TROUPE_BINARY

Runs the README's first Python example as written, then checks what it promises: records
followed while a job trains, the same final weights as `troupe run` bit for bit, models that
load and score what summary.json says, DataFrames with a row per record, stop() and Ctrl-C
leaving the folder whole, suites through the program, and bad jobs refused by name.
"""
import gzip
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np
import torch

import troupe

SOURCE, BINARY = sys.argv[1], sys.argv[2]
FASHION = "/usr/share/datasets/fashion-mnist"


def synthetic(name, steps=40, **extra):
    job = {"name": name, "seed": 3, "model": {"type": "mlp", "hidden": [32]},
           "data": {"type": "synthetic", "train_samples": 1024, "test_samples": 256},
           "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
           "training": {"steps": steps, "batch_size": 32, "eval_interval": 10},
           "parallelism": {"policy": "sync", "replicas": 2, "threads_per_replica": 1}}
    job.update(extra)
    return job


def fashion_test_set():
    def read(name):
        with gzip.open(f"{FASHION}/{name}", "rb") as f:
            data = f.read()
        dims = data[3]
        shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
        return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)
    return read("t10k-images-idx3-ubyte.gz"), read("t10k-labels-idx1-ubyte.gz")


class Module(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="troupe-python-")
        cls.before = os.getcwd()
        os.chdir(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        # KEEP_TMP=1 keeps it, as for the shell tests (tests/lib/harness.sh).
        os.chdir(cls.before)
        if os.environ.get("KEEP_TMP") != "1":
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_readme_example_runs_and_its_model_scores_what_the_summary_says(self):
        with open(os.path.join(SOURCE, "README.md")) as f:
            readme = f.read()
        section = readme[readme.index("\n## Python"):]
        example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
        exec(compile(example, "README.md (Python example)", "exec"), {})
        folder = re.search(r'out="([^"]+)"', example).group(1)
        summary = troupe.read_run(folder).summary
        self.assertEqual(summary["status"], "succeeded")
        model = troupe.load_model(folder)
        job = troupe.read_run(folder).job
        p = job["data"]["preprocessing"]
        images, labels = fashion_test_set()
        x = (torch.from_numpy(images.astype(np.float32)) * p["scale"] - p["mean"]) / p["std"]
        with torch.no_grad():
            predicted = model(x.unsqueeze(1)).argmax(1).numpy()
        accuracy = float((predicted == labels).mean())
        self.assertAlmostEqual(accuracy, summary["test_accuracy"], places=4)

    def test_records_are_followed_while_the_job_trains(self):
        run = troupe.start(synthetic("follow", steps=60), out="follow")
        self.assertTrue(os.path.isdir(run.folder))
        # Read at once, before the run wrote anything, it is a running run, not "not a run's
        # output folder" (found probing).
        self.assertTrue(troupe.read_run(run.folder).running or run.done())
        self.assertIn("parameters", run.plan)
        steps, evals = [], 0
        for record in run.records():
            if record["event"] == "step":
                steps.append(record["step"])
            evals += record["event"] == "eval"
        self.assertTrue(run.done())
        self.assertEqual(steps, list(range(60)))
        self.assertEqual(evals, 6)
        summary = run.wait()
        self.assertEqual((summary["status"], summary["steps"]), ("succeeded", 60))
        frames = troupe.read_run("follow").metrics
        self.assertEqual(len(frames["step"]), 60)
        self.assertEqual(len(frames["worker_step"]), 120)
        self.assertEqual(list(frames["eval"]["step"]), [9, 19, 29, 39, 49, 59])

    def test_in_process_run_equals_the_program_bit_for_bit(self):
        job = synthetic("same")
        with open("same.json", "w") as f:
            json.dump(job, f)
        subprocess.run([BINARY, "run", "same.json", "--out", "by_program", "--quiet"],
                       check=True, capture_output=True)
        summary = troupe.run("same.json", out="by_module", sets=["optimizer.lr=0.05"])
        self.assertEqual(summary["status"], "succeeded")
        ours = torch.load("by_module/final_weights.pt")
        theirs = torch.load("by_program/final_weights.pt")
        self.assertEqual(sorted(ours), sorted(theirs))
        for name in ours:
            self.assertTrue(torch.equal(ours[name], theirs[name]), name)

    def test_cnn_loads_strictly_and_predicts_every_class(self):
        job = synthetic("cnn", steps=10, model={"type": "cnn", "channels": [4, 8],
                                                "kernel_size": 3, "hidden": [16],
                                                "activation": "gelu"})
        self.assertEqual(troupe.run(job, out="cnn")["status"], "succeeded")
        model = troupe.load_model("cnn")
        self.assertEqual(tuple(model(torch.zeros(5, 1, 28, 28)).shape), (5, 10))
        self.assertEqual(type(model.cact1).__name__, "GELU")

    def test_stop_ends_after_a_step_and_leaves_the_folder_whole(self):
        run = troupe.start(synthetic("stop", steps=100000), out="stop")
        for record in run.records():
            if record["event"] == "step":
                run.stop()
        summary = run.wait()
        self.assertEqual(summary["status"], "failed")
        self.assertTrue(summary["error"].startswith("interrupted"), summary["error"])
        self.assertFalse(os.path.exists("stop/final_weights.pt"))

    def test_ctrl_c_while_waiting_stops_the_run_and_is_raised_again(self):
        run = troupe.start(synthetic("ctrl_c", steps=100000), out="ctrl_c")
        timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        with self.assertRaises(KeyboardInterrupt):
            run.wait()
        self.assertTrue(run.done())
        summary = troupe.read_run("ctrl_c").summary
        self.assertTrue(summary["error"].startswith("interrupted"), summary)

    def test_a_run_dropped_while_training_is_stopped_and_summarized(self):
        run = troupe.start(synthetic("dropped", steps=100000), out="dropped")
        next(r for r in run.records() if r["event"] == "step")
        del run
        self.assertEqual(troupe.read_run("dropped").summary["status"], "failed")

    def test_a_working_directory_change_while_training_moves_neither_folder_nor_data(self):
        # Found probing: the run wrote its weights and summary.json into ../b/out, over another
        # run's, and read a relative data path from there.
        os.makedirs("cd_elsewhere/cd_run", exist_ok=True)
        with open("cd_elsewhere/cd_run/summary.json", "w") as f:
            f.write('{"status": "another run"}')
        if not os.path.exists("fm"):
            os.symlink(FASHION, "fm")
        job = synthetic("cd_run", steps=200, data={"type": "fashion_mnist", "path": "fm"})
        run = troupe.start(job, out="cd_run", force=True)
        self.assertEqual(run.folder, os.path.join(self.tmp, "cd_run"))
        os.chdir("cd_elsewhere")
        try:
            summary = run.wait()
        finally:
            os.chdir(self.tmp)
        self.assertEqual(summary["status"], "succeeded", summary)
        self.assertTrue(os.path.exists("cd_run/final_weights.pt"))
        self.assertEqual(troupe.read_summary("cd_elsewhere/cd_run"), {"status": "another run"})
        # Ended, it has let go of its folder though the object lives: another run may go there.
        self.assertFalse(troupe.read_run("cd_run").running)
        again = troupe.run(synthetic("cd_run", steps=5), out="cd_run", force=True)
        self.assertEqual(again["status"], "succeeded")
        del run

    def exits_leaving_it_interrupted(self, name, body):
        """Runs `body` (Python, with `job` a long job named `name`) in an interpreter of its
        own, which exits while the run trains: it must end 0 with the folder summarized."""
        script = f"import threading, troupe\njob = {synthetic(name, steps=100000)!r}\n" + body
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(troupe.read_summary(name)["error"].startswith("interrupted"))

    def test_a_daemon_thread_waiting_at_exit_leaves_the_folder_whole(self):
        # Found probing: the interpreter's exit aborted the process (std::terminate, exit 134)
        # with the run's folder lacking summary.json.
        self.exits_leaving_it_interrupted("daemon", (
            "run = troupe.start(job, out='daemon')\n"
            "threading.Thread(target=run.wait, daemon=True).start()\n"
            "next(r for r in run.records() if r['event'] == 'step')\n"))
        # A `with` block left open at exit is closed by the finalizing main thread, whose wait
        # goes on (found reviewing: it was parked with the daemon threads, a hang).
        self.exits_leaving_it_interrupted("open_with", (
            "def follow():\n"
            "    with troupe.start(job, out='open_with') as run:\n"
            "        yield from run.records()\n"
            "g = follow()\n"
            "next(r for r in g if r['event'] == 'step')\n"))

    def test_a_suite_runs_through_the_program_and_reads_as_a_leaderboard(self):
        suite = synthetic("sweep", steps=20)
        suite["sweep"] = {"optimizer.lr": [0.01, 0.05]}
        summary = troupe.run(suite, out="sweep")
        self.assertEqual(summary["status"], "succeeded")
        board = troupe.read_suite("sweep").leaderboard
        self.assertEqual(sorted(board["optimizer.lr"]), [0.01, 0.05])
        self.assertEqual(list(board["rank"]), [1, 2])
        first = board["name"][0]
        self.assertEqual(troupe.read_suite("sweep").run(first).summary["status"], "succeeded")

    def test_a_job_over_local_nodes_runs_through_the_program(self):
        summary = troupe.run(synthetic("nodes", steps=20), out="nodes", local_nodes=2)
        self.assertEqual((summary["status"], summary["steps"]), ("succeeded", 20))
        self.assertTrue(os.path.exists("nodes/final_weights.pt"))

    def test_bad_jobs_are_refused_by_name_before_anything_is_written(self):
        with self.assertRaisesRegex(troupe.JobError, "/optimizer/lrr"):
            troupe.run(synthetic("bad", optimizer={"type": "sgd", "lrr": 1}), out="bad")
        self.assertFalse(os.path.exists("bad"))
        with self.assertRaisesRegex(troupe.JobError, r"--set training\.steps=-1"):
            troupe.start(synthetic("bad"), out="bad", sets=["training.steps=-1"])
        with self.assertRaisesRegex(troupe.JobError, "no_such_job.json"):
            troupe.run("no_such_job.json")
        troupe.run(synthetic("taken", steps=5), out="taken")
        with self.assertRaisesRegex(troupe.JobError, "taken.*not empty"):
            troupe.start(synthetic("again"), out="taken")
        with self.assertRaises(TypeError):
            troupe.run(["not", "a", "job"])
        with self.assertRaisesRegex(TypeError, "sets"):
            troupe.run(synthetic("bad"), sets="optimizer.lr=0.1")
        with self.assertRaisesRegex(troupe.DataError, "no_such_file.pt"):
            troupe.run(synthetic("bad", data={"type": "tensors", "train": "no_such_file.pt",
                                              "test": "no_such_file.pt"}), out="bad")
        with self.assertRaisesRegex(ValueError, "/training/batch_size"):
            troupe.validate(synthetic("bad"), sets=["training.batch_size=0"])
        self.assertIn("replicas", troupe.validate(synthetic("fine")))
        # A NUL ends a C++ string: "base.json\0x" was base.json, a folder "out\0x" was made.
        for call in (lambda: troupe.validate("no_such_job.json\0.json"),
                     lambda: troupe.start(synthetic("nul"), out="nul\0x"),
                     lambda: troupe.validate(synthetic("nul"), sets=["training.steps=20\0junk"])):
            with self.assertRaisesRegex(ValueError, "NUL"):
                call()
        self.assertFalse(os.path.exists("nul"))
        # A NaN is named as such, not as a syntax error in text the user never wrote.
        with self.assertRaisesRegex(ValueError, "a NaN or an infinity"):
            troupe.validate(synthetic("bad", optimizer={"type": "sgd", "lr": float("nan")}))
        # A suite's refusal names "the job", not the temporary file it was written to, and
        # says "error:" once.
        suite = synthetic("twins")
        suite["jobs"] = [{"name": "x"}, {"name": "x"}]
        for call in (lambda: troupe.validate(suite), lambda: troupe.run(suite, out="twins")):
            with self.assertRaises(troupe.JobError) as refused:
                call()
            self.assertIn("/jobs/1/name", str(refused.exception))
            self.assertNotIn("troupe-job-", str(refused.exception))
            self.assertNotIn("error:", str(refused.exception))

    def test_missing_folders_and_weights_are_named(self):
        with self.assertRaisesRegex(FileNotFoundError, "nowhere"):
            troupe.read_run("nowhere")
        os.makedirs("garbled", exist_ok=True)
        with open("garbled/metrics.jsonl", "w") as f:
            f.write('{"event": "step", "step": 0}\n[1, 2]\n')
        with self.assertRaisesRegex(ValueError, r"garbled/metrics.jsonl:2: not a JSON record"):
            troupe.read_run("garbled")
        # Found probing as a hostile user: damaged folders raised AttributeError, KeyError or
        # UnicodeDecodeError without a path, a pipe hung the reader, /dev/zero filled memory.
        for name, content in (("list", "[]"), ("empty", "{}"), ("text", '{"jobs": "abc"}')):
            os.makedirs(f"board_{name}", exist_ok=True)
            with open(f"board_{name}/leaderboard.json", "w") as f:
                f.write(content)
            with self.assertRaisesRegex(ValueError, f"board_{name}/leaderboard.json: not"):
                troupe.read_suite(f"board_{name}")
        os.makedirs("damaged", exist_ok=True)
        with open("damaged/summary.json", "w") as f:
            f.write("[1, 2]")
        with self.assertRaisesRegex(ValueError, "damaged/summary.json: not a JSON object"):
            troupe.read_summary("damaged")
        with open("damaged/summary.json", "w") as f:
            f.write('{"status": "succeeded"}')
        with open("damaged/metrics.jsonl", "wb") as f:
            f.write(b'{"event": "step", "step": 0}\n\xff\xfe\n' + b"[" * 100000 + b"\n")
        with self.assertRaisesRegex(ValueError, "damaged/metrics.jsonl:2: not a JSON record"):
            troupe.read_run("damaged")
        with open("damaged/metrics.jsonl", "wb") as f:
            f.write(b"[" * 100000 + b"\n")
        with self.assertRaisesRegex(ValueError, "damaged/metrics.jsonl:1: not a JSON record"):
            troupe.read_run("damaged")
        os.remove("damaged/metrics.jsonl")
        os.symlink("/dev/zero", "damaged/metrics.jsonl")
        with self.assertRaisesRegex(ValueError, "damaged/metrics.jsonl: not a regular file"):
            troupe.read_run("damaged")
        os.remove("damaged/summary.json")
        os.mkfifo("damaged/summary.json")
        with self.assertRaisesRegex(ValueError, "damaged/summary.json: not a regular file"):
            troupe.read_summary("damaged")
        os.makedirs("empty_folder", exist_ok=True)
        with self.assertRaisesRegex(ValueError, "holds neither metrics.jsonl nor summary.json"):
            troupe.read_run("empty_folder")
        run = troupe.start(synthetic("unfinished", steps=100000), out="unfinished")
        run.stop()
        run.wait()
        with self.assertRaisesRegex(FileNotFoundError, "unfinished/final_weights.pt"):
            troupe.load_model("unfinished")
        with self.assertRaisesRegex(ValueError, "'worst'"):
            troupe.load_model("unfinished", weights="worst")
        with self.assertRaisesRegex(FileNotFoundError, "no_such_run: no such run folder"):
            troupe.load_model("no_such_run")
        os.makedirs("fake_members", exist_ok=True)
        for k in range(2):
            open(f"fake_members/member_{k}.pt", "w").close()
        with self.assertRaisesRegex(FileNotFoundError, "member_5.pt: no such member: the run is "
                                    r"a stacked ensemble of 2 \(weights=0 .. 1\)"):
            troupe.load_model("fake_members", weights=5)

    def test_weights_are_read_as_tensors_only_never_unpickled_as_code(self):
        # Found probing as a hostile user: load_model used torch.load, which runs whatever a
        # pickle holds, and run folders get copied from elsewhere.
        troupe.run(synthetic("kept", steps=5), out="kept")
        model = troupe.load_model("kept")
        self.assertEqual(sum(p.numel() for p in model.parameters()) > 0, True)
        shutil.copytree("kept", "planted")

        class Planted:
            def __reduce__(self):
                return (os.system, ("touch planted/ran",))
        with open("planted/final_weights.pt", "wb") as f:
            pickle.dump(Planted(), f)
        with self.assertRaisesRegex(ValueError, "planted/final_weights.pt"):
            troupe.load_model("planted")
        self.assertFalse(os.path.exists("planted/ran"))
        # A stacked ensemble has a model per member, and says so.
        troupe.run(synthetic("members", steps=5, ensemble={"members": 2},
                             parallelism={"replicas": 1}), out="members")
        with self.assertRaisesRegex(FileNotFoundError, "stacked ensemble of 2 members"):
            troupe.load_model("members")
        self.assertEqual(len(list(troupe.load_model("members", weights=1).parameters())) > 0,
                         True)

    def test_wrong_arguments_and_foreign_weights_are_named(self):
        # Found probing the module as a user: a bytes --set became "/b'training: unknown key",
        # a bytes out= a TypeError naming neither, and model.state_dict() saved with torch.save
        # "INTERNAL ASSERT FAILED ... please report a bug to PyTorch".
        with self.assertRaisesRegex(TypeError, "each --set assignment is a str"):
            troupe.validate(synthetic("bad"), sets=[b"training.steps=3"])
        with self.assertRaisesRegex(TypeError, "out is a folder's path"):
            troupe.start(synthetic("bad"), out=b"bytes_out")
        with self.assertRaisesRegex(TypeError, "local_nodes is a count"):
            troupe.run(synthetic("bad"), out="bad_nodes", local_nodes="x")
        with self.assertRaisesRegex(ValueError, "out is an empty folder name"):
            troupe.start(synthetic("bad"), out="")
        # A sweep's numpy scalars and paths are the numbers and strings they stand for.
        numpy_job = synthetic("numpy", steps=np.int64(30))
        numpy_job["optimizer"]["lr"] = np.float32(0.25)
        numpy_job["model"]["hidden"] = np.array([16, 8])  # a list, not "a NaN or an infinity"
        self.assertIn("training: 30 steps", troupe.validate(numpy_job))
        with self.assertRaisesRegex(TypeError, "the job holds .*a set"):
            troupe.validate(synthetic("bad", seed={1}))
        before = os.environ.get("TROUPE_BINARY")
        for wrong in (self.tmp, os.path.join(self.tmp, "no_such_troupe")):
            os.environ["TROUPE_BINARY"] = wrong
            with self.assertRaisesRegex(FileNotFoundError, "TROUPE_BINARY=.*not an executable"):
                troupe.binary()
        if before is None:
            del os.environ["TROUPE_BINARY"]
        else:
            os.environ["TROUPE_BINARY"] = before
        troupe.run(synthetic("foreign", steps=5), out="foreign")
        torch.save(torch.nn.Linear(784, 10).state_dict(), "foreign/final_weights.pt")
        with self.assertRaisesRegex(ValueError, r"foreign/final_weights.pt: holds a dictionary "
                                    r"LibTorch cannot read \(an OrderedDict"):
            troupe.load_model("foreign")
        mlp = {"fc1.weight": torch.zeros(64, 784), "fc1.bias": torch.zeros(64),
               "out.weight": torch.zeros(10, 64), "out.bias": torch.zeros(10)}
        torch.save(dict(mlp, extra=torch.zeros(1)), "foreign/final_weights.pt")
        with self.assertRaisesRegex(ValueError, "foreign/final_weights.pt: its weights do not "
                                    "fit the run's model"):
            troupe.load_model("foreign")
        torch.save({"fc1.weight": mlp["fc1.weight"], "fc1.bias": mlp["fc1.bias"]},
                   "foreign/final_weights.pt")
        with self.assertRaisesRegex(ValueError, "not the weights of the run's mlp"):
            troupe.load_model("foreign")
        # One entry is pickled with SETITEM, which LibTorch's reader lacks: said in words.
        torch.save({"out.weight": mlp["out.weight"]}, "foreign/final_weights.pt")
        with self.assertRaisesRegex(ValueError, "a dictionary of one entry"):
            troupe.load_model("foreign")
        # A suite's folder is named as one by the readers of a run's.
        troupe.run(dict(synthetic("pair", steps=5), jobs=[{"name": "a"}, {"name": "b"}]),
                   out="pair")
        for call in (lambda: troupe.read_run("pair"), lambda: troupe.load_model("pair")):
            with self.assertRaisesRegex(ValueError, "pair: a suite's folder"):
                call()
        self.assertEqual(troupe.read_run("pair/a").summary["status"], "succeeded")
        with self.assertRaisesRegex(FileNotFoundError, "no_such.jsonl: no such file"):
            list(troupe.read_records("no_such.jsonl"))
        # A folder whose run was killed before its summary does not read as running for ever.
        os.makedirs("orphan", exist_ok=True)
        with open("orphan/metrics.jsonl", "w") as f:
            f.write('{"event": "step", "step": 0}\n')
        self.assertIn("ended without a summary", repr(troupe.read_run("orphan")))
        self.assertFalse(troupe.read_run("orphan").running)
        # validate() of a suite dict names no temporary file.
        self.assertNotIn("troupe-job-", troupe.validate(dict(synthetic("pair"),
                                                             jobs=[{"name": "a"}])))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
