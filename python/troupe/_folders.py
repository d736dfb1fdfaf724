"""Reading what troupe leaves in a run's or a suite's folder (docs/run-folder.md): records,
summaries, and pandas DataFrames of both. pandas is imported only when a frame is asked for."""
import fcntl
import json
import os
import stat
import time


def _regular_file(path):
    """Whether `path` exists; a pipe, a device or a folder put in a file's place is refused,
    never read (a pipe would wait for a writer, /dev/zero would fill memory)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path}: not a regular file")
    return True


def _read_json(path):
    """A JSON object troupe wrote; None where it is not written (yet). Anything else is a
    ValueError naming the file."""
    if not _regular_file(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"{path}: not JSON ({type(e).__name__}: {e})"[:1000]) from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: not a JSON object (a {type(value).__name__})")
    return value


def read_summary(folder):
    """A run's or a suite's summary.json as a dict; None where it is not written (yet)."""
    return _read_json(os.path.join(os.fspath(folder), "summary.json"))


def read_records(path, follow=None, poll=0.1):
    """Each record of a metrics.jsonl file, as a dict, in the order written. With `follow` (a
    function saying whether the writer has finished), waits for records still to come until it
    has, so a line is yielded only once it is whole."""
    while follow is not None and not os.path.exists(path):
        if follow():
            return
        time.sleep(poll)
    if not _regular_file(path):
        if follow is None:  # a path with a typo yielded nothing, as an empty file does
            raise FileNotFoundError(f"{path}: no such file")
        return
    pending = ""
    number = 0
    # Bytes that are not UTF-8 become U+FFFD: their line is then not JSON, named by number.
    with open(path, encoding="utf-8", errors="replace") as f:
        while True:
            finished = follow is None or follow()  # asked before reading: nothing is missed
            chunk = f.read()
            pending += chunk
            *lines, pending = pending.split("\n")
            for line in lines:
                number += 1
                if line.strip():
                    yield _record(path, number, line)
            if finished:
                return
            if not chunk:
                time.sleep(poll)


def _record(path, number, line):
    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{path}:{number}: not a JSON record ({e})"[:1000]) from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}:{number}: not a JSON record (a {type(record).__name__})")
    return record


def _frames_by_event(records):
    import pandas as pd
    kinds = {}
    for r in records:
        kinds.setdefault(r.get("event", "?"), []).append(
            {k: v for k, v in r.items() if k != "event"})
    return {kind: pd.DataFrame(rows) for kind, rows in kinds.items()}


class RunFolder:
    """One run's folder: `summary` and `job` (dicts; summary None while it runs, job None in the
    moment between a run claiming its folder and writing job.json), `records`
    (every metrics.jsonl record) and `metrics`, a pandas DataFrame per event kind ("step",
    "worker_step", "eval", "confusion", "node_lost", ...), one row per record."""

    def __init__(self, folder):
        self.folder = os.fspath(folder)
        if not os.path.isdir(self.folder):
            if os.path.exists(self.folder):
                raise ValueError(f"{self.folder}: not a folder")
            raise FileNotFoundError(f"{self.folder}: no such run folder")
        if os.path.exists(os.path.join(self.folder, "suite.json")):
            raise ValueError(f"{self.folder}: a suite's folder: read_suite() reads it, and "
                             "read_run() one of its jobs' (FOLDER/NAME)")
        metrics = os.path.join(self.folder, "metrics.jsonl")
        self.summary = read_summary(self.folder)
        has_metrics = _regular_file(metrics)
        # A run that has just claimed its folder has written nothing yet: it holds the lock.
        if self.summary is None and not has_metrics and not self.running:
            raise ValueError(f"{self.folder}: holds neither metrics.jsonl nor summary.json: not "
                             "a run's output folder")
        self.job = _read_json(os.path.join(self.folder, "job.json"))
        # A job a suite runner wrote the summary of may have no records (killed at its start).
        self.records = list(read_records(metrics)) if has_metrics else []
        self._metrics = None

    @property
    def metrics(self):
        if self._metrics is None:
            self._metrics = _frames_by_event(self.records)
        return self._metrics

    @property
    def running(self):
        """Whether a troupe run writes the folder now: it holds the folder's lock (an flock,
        which the kernel lets go however the run ends), so a run killed before its summary
        does not read as running for ever."""
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    def __repr__(self):
        status = (self.summary or {}).get("status")
        if status is None:
            status = "running" if self.running else "ended without a summary (killed?)"
        return f"RunFolder({self.folder!r}, {status}, {len(self.records)} records)"


class SuiteFolder:
    """A suite's folder: `summary` (its summary.json), `leaderboard` (a pandas DataFrame, one
    row per job in rank order, each overridden setting a column of its own), `ranked_by`, and
    `run(name)`, the RunFolder of one job."""

    def __init__(self, folder):
        import pandas as pd
        self.folder = os.fspath(folder)
        path = os.path.join(self.folder, "leaderboard.json")
        board = _read_json(path)
        if board is None:
            raise FileNotFoundError(f"{self.folder}: no leaderboard.json (not a suite's folder, "
                                    "or the suite has not finished)")
        jobs = board.get("jobs")
        if not isinstance(jobs, list) or not all(isinstance(job, dict) for job in jobs):
            raise ValueError(f"{path}: not the leaderboard troupe writes (\"jobs\" is not a "
                             "list of objects)")
        self.summary = read_summary(self.folder)
        self.ranked_by = board.get("ranked_by")
        rows = []
        for job in jobs:
            row = {k: v for k, v in job.items() if k != "overrides"}
            overrides = job.get("overrides")
            row.update(overrides if isinstance(overrides, dict) else {})
            rows.append(row)
        self.leaderboard = pd.DataFrame(rows)

    def run(self, name):
        return RunFolder(os.path.join(self.folder, name))

    def __repr__(self):
        return f"SuiteFolder({self.folder!r}, {len(self.leaderboard)} jobs)"


def read_run(folder):
    """The RunFolder of a run's output folder."""
    return RunFolder(folder)


def read_suite(folder):
    """The SuiteFolder of a suite's output folder."""
    return SuiteFolder(folder)
