"""Reading what troupe leaves in a run's or a suite's folder (docs/run-folder.md): records,
summaries, and pandas DataFrames of both. pandas is imported only when a frame is asked for."""
import json
import os
import time


def _read_json(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


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
    if not os.path.exists(path):
        return
    pending = ""
    number = 0
    with open(path) as f:
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
    except ValueError as e:
        raise ValueError(f"{path}:{number}: not a JSON record ({e})") from None
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
    """One run's folder: `summary` and `job` (dicts; summary None while it runs), `records`
    (every metrics.jsonl record) and `metrics`, a pandas DataFrame per event kind ("step",
    "worker_step", "eval", "confusion", "node_lost", ...), one row per record."""

    def __init__(self, folder):
        self.folder = os.fspath(folder)
        if not os.path.isdir(self.folder):
            raise FileNotFoundError(f"{self.folder}: no such run folder")
        self.summary = read_summary(self.folder)
        self.job = _read_json(os.path.join(self.folder, "job.json"))
        self.records = list(read_records(os.path.join(self.folder, "metrics.jsonl")))
        self._metrics = None

    @property
    def metrics(self):
        if self._metrics is None:
            self._metrics = _frames_by_event(self.records)
        return self._metrics

    def __repr__(self):
        status = (self.summary or {}).get("status", "running")
        return f"RunFolder({self.folder!r}, {status}, {len(self.records)} records)"


class SuiteFolder:
    """A suite's folder: `summary` (its summary.json), `leaderboard` (a pandas DataFrame, one
    row per job in rank order, each overridden setting a column of its own), `ranked_by`, and
    `run(name)`, the RunFolder of one job."""

    def __init__(self, folder):
        import pandas as pd
        self.folder = os.fspath(folder)
        board = _read_json(os.path.join(self.folder, "leaderboard.json"))
        if board is None:
            raise FileNotFoundError(f"{self.folder}: no leaderboard.json (not a suite's folder, "
                                    "or the suite has not finished)")
        self.summary = read_summary(self.folder)
        self.ranked_by = board.get("ranked_by")
        rows = []
        for job in board["jobs"]:
            row = {k: v for k, v in job.items() if k != "overrides"}
            row.update(job.get("overrides") or {})
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
