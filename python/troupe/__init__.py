"""troupe from Python: run a job, follow its records, read its folder, load its model.

    import troupe
    summary = troupe.run({"name": "mlp", "training": {"steps": 200}}, out="runs/mlp")
    print(summary["status"], summary["test_accuracy"])
    frames = troupe.read_run("runs/mlp").metrics   # {"step": DataFrame, "eval": DataFrame, ...}
    model = troupe.load_model("runs/mlp")          # a torch.nn.Module with the final weights

A job is a dict (the job file's JSON) or the path of a job file; `sets` are `--set`
assignments ("optimizer.lr=0.05"). A single job runs in this process, exactly as `troupe run`
runs it, into the same folder; a suite, or a job across node processes (`local_nodes`), runs
the troupe program. A bad job raises JobError (a ValueError) naming every problem before
anything is written. Ctrl-C while waiting stops the run after its step, as in the terminal,
leaving its folder whole, and is raised again as KeyboardInterrupt.
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import weakref

from . import _native
from ._folders import RunFolder, SuiteFolder, read_records, read_run, read_suite, read_summary
from ._models import load_model

JobError = _native.JobError
DataError = _native.DataError
__version__ = _native.version

__all__ = ["run", "start", "validate", "Run", "JobError", "DataError", "RunFolder",
           "SuiteFolder", "read_run", "read_suite", "read_summary", "read_records", "load_model",
           "binary"]


def _job_args(job):
    """(job_text, job_path): a dict as JSON text, a path as it is."""
    if isinstance(job, dict):
        try:
            # JSON has no NaN or infinity: Python's "NaN" would reach troupe as a syntax error
            # at a place of text the user never wrote.
            return json.dumps(job, allow_nan=False, default=_json_value), ""
        except ValueError:
            raise ValueError("the job holds a NaN or an infinity (a float('nan') or "
                             "float('inf') among its values): a job is JSON, which has "
                             "neither") from None
    if isinstance(job, (str, os.PathLike)):
        return "", _no_nul(os.fspath(job), "the job's path")
    raise TypeError(f"a job is a dict or a job file's path, not {type(job).__name__}")


def _json_value(value):
    """json.dumps's fallback for what a sweep's dict often holds: numpy's scalars and arrays
    (np.float32(0.1), np.array([64, 32])) and paths, as the numbers, lists and strings they
    stand for."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if type(value).__module__ == "numpy" and callable(getattr(value, "tolist", None)):
        return value.tolist()  # a scalar's number, an array's (nested) list
    raise TypeError(f"the job holds {value!r}, a {type(value).__name__}: a job is JSON (dicts, "
                    "lists, str, int, float, bool and None)")


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def binary():
    """The troupe program: $TROUPE_BINARY, else the one built or installed with this module,
    else `troupe` on PATH."""
    chosen = os.environ.get("TROUPE_BINARY", "")
    if chosen:  # a typo there fell back to another troupe silently
        if not _executable(chosen):
            raise FileNotFoundError(f"TROUPE_BINARY={chosen}: not an executable file")
        return chosen
    for path in _native.binary_candidates:
        if _executable(path):
            return path
    found = shutil.which("troupe")
    if found:
        return found
    raise FileNotFoundError("the troupe program is not built or installed beside this module "
                            "and not on PATH; set TROUPE_BINARY")


def _with_job_file(job, action):
    """Calls action(path) with the job as a file: its own path, or a temporary copy of a dict.
    A JobError about the copy names "the job", as errors about a dict do, not a file the user
    never saw."""
    text, path = _job_args(job)
    if path:
        return action(path)
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="troupe-job-") as f:
        f.write(text)
        f.flush()
        try:
            return action(f.name)
        except JobError as e:
            raise JobError(str(e).replace(f.name, "the job")) from None


def _program_error(stderr, fallback):
    """The troupe program's complaint as a JobError's text: its lines without their "error: "
    (the exception says it is one)."""
    # Not the command line's "Run with --help" nor its count of problems: one a line already.
    lines = [line[len("error: "):] if line.startswith("error: ") else line
             for line in (stderr or "").strip().splitlines()
             if line != "Run with --help for more information."
             and not re.fullmatch(r"\d+ problems", line)]
    return "\n".join(lines) or fallback


def _no_nul(text, what):
    """`text`, refused where it holds a NUL: C++ would read only what comes before it (a path
    "a.json\\0b" named a.json, a folder "out\\0x" made out)."""
    if "\0" in text:
        raise ValueError(f"{what} holds a NUL character: {text!r}")
    return text


def _checked_sets(sets):
    if isinstance(sets, (str, bytes)):
        raise TypeError("sets is a list of --set assignments, e.g. [\"optimizer.lr=0.05\"]")
    for s in sets:  # str() of b"a=1" is "b'a=1'", which validation then called an unknown key
        if not isinstance(s, str):
            raise TypeError(f"sets holds {s!r}, a {type(s).__name__}: each --set assignment is "
                            "a str, e.g. \"optimizer.lr=0.05\"")
    return [_no_nul(s, "a --set assignment") for s in sets]


def _checked_out(out):
    if out is None:
        return ""
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out is a folder's path (a str or os.PathLike), got a "
                        f"{type(out).__name__}")
    if not os.fspath(out):  # as the program refuses --out ""
        raise ValueError("out is an empty folder name (None chooses runs/NAME-TIMESTAMP)")
    return _no_nul(os.fspath(out), "out")


def _checked_nodes(local_nodes):
    if isinstance(local_nodes, bool) or not isinstance(local_nodes, int) or local_nodes < 0:
        raise TypeError(f"local_nodes is a count of node processes (an int >= 0), got "
                        f"{local_nodes!r}")
    return local_nodes


def _set_args(sets):
    args = []
    for s in sets:
        args += ["--set", s]
    return args


def validate(job, sets=()):
    """The plan `troupe validate` prints, as text; raises JobError (or DataError) otherwise."""
    text, path = _job_args(job)
    sets = _checked_sets(sets)
    if not _native.is_suite(text, path):
        return _native.validate(text, path, sets)

    def check(file):
        done = subprocess.run([binary(), "validate", file] + _set_args(sets),
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise JobError(_program_error(done.stderr, f"troupe exited {done.returncode}"))
        return done.stdout.replace(file, path or "the job")  # a dict's copy is no user's file
    return _with_job_file(job, check)


# The Runs not yet collected: at the interpreter's exit each is stopped after its step and
# waited for, so that a Run a daemon thread waits on (or one still referenced) leaves its folder
# whole; the daemon thread itself is parked by the native wait, never resumed.
_live_runs = weakref.WeakSet()


@atexit.register
def _stop_live_runs():
    for live in list(_live_runs):
        live.stop()
    for live in list(_live_runs):
        while not live._native.wait(0.1):
            pass


class Run:
    """A single job training in this process (see start()). Its folder exists from the start;
    `records()` follows its metrics.jsonl, `wait()` returns summary.json's contents."""

    def __init__(self, job, out=None, sets=(), force=False):
        text, path = _job_args(job)
        try:
            self._native = _native.Run(text, path, _checked_sets(sets), _checked_out(out),
                                       bool(force))
        except JobError as e:  # the program's words for what Python calls otherwise
            raise JobError(str(e).replace("pass --force", "pass force=True")
                           .replace("troupe run --local-nodes K",
                                    "troupe.run(job, local_nodes=K, out=...)")) from None
        self.folder = self._native.folder  # absolute: os.chdir meanwhile does not move it
        self.plan = self._native.plan
        _live_runs.add(self)

    def done(self):
        return self._native.done()

    def stop(self):
        """Asks the run to stop after its step (as Ctrl-C does); wait() then returns its
        summary, status "failed" with "interrupted after N steps" as the error."""
        self._native.stop()

    def wait(self, timeout=None):
        """Waits for the run to end and returns its summary (a dict); None if `timeout` seconds
        passed first. Ctrl-C stops the run, waits for it to end whole, and raises
        KeyboardInterrupt."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not self._native.wait(0.1):
                if deadline is not None and time.monotonic() >= deadline:
                    return None
        except KeyboardInterrupt:
            self.stop()
            while not self._native.wait(0.1):
                pass
            raise
        problem = self._native.summary_error()
        if problem:
            raise OSError(f"{self.folder}: summary.json could not be written: {problem}")
        return read_summary(self.folder)  # not read_run: its records may be many megabytes

    def records(self, poll=0.1):
        """Each record of metrics.jsonl (a dict) as the run writes it, until the run ends."""
        yield from read_records(os.path.join(self.folder, "metrics.jsonl"), follow=self.done,
                                poll=poll)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        self._native.wait(1e9)
        return False


def start(job, out=None, sets=(), force=False):
    """Plans a single job, claims its folder (`out`, default runs/NAME-TIMESTAMP; an existing
    one only with force) and starts training it in this process; returns its Run."""
    return Run(job, out=out, sets=sets, force=force)


def run(job, out=None, sets=(), force=False, local_nodes=0, quiet=True):
    """Runs a job to its end and returns its summary.json as a dict (a suite's summary for a
    suite; status "failed" with the cause for a run that failed). A single job runs in this
    process; a suite, or a job over `local_nodes` node processes, runs the troupe program
    (its output shown unless quiet)."""
    text, path = _job_args(job)
    sets = _checked_sets(sets)
    local_nodes = _checked_nodes(local_nodes)
    _checked_out(out)
    if not local_nodes and not _native.is_suite(text, path):
        return start(job, out=out, sets=sets, force=force).wait()
    if not out:
        raise ValueError("a suite or a job over nodes from Python needs out= (its folder)")

    def launch(file):
        command = [binary(), "run", file, "--out", _checked_out(out)] + _set_args(sets)
        if force:
            command.append("--force")
        if local_nodes:
            command += ["--local-nodes", str(local_nodes)]
        output = subprocess.PIPE if quiet else None
        child = subprocess.Popen(command, stdout=output, stderr=output, text=True)
        try:
            stdout, stderr = child.communicate()
        except KeyboardInterrupt:
            child.send_signal(2)  # SIGINT: the jobs stop after their step, folders left whole
            child.wait()
            raise
        summary = read_summary(out)
        if child.returncode == 2 or summary is None:
            raise JobError(_program_error(stderr, f"troupe exited {child.returncode}"))
        return summary
    return _with_job_file(job, launch)
