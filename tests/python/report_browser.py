#!/usr/bin/python3
"""Opens troupe report pages in headless Chromium and checks what it drew.

Speaks the DevTools protocol over a pipe (--remote-debugging-pipe: commands on fd 3, replies
on fd 4, each a JSON text ended by NUL), so it needs nothing beyond Python and Chromium.

  report_browser.py static PAGE_URL RUN_OR_SUITE_DIR SCREENSHOT.png
      every chart rendered, each series with the points its data holds; no console error
  report_browser.py live PAGE_URL RUN_DIR
      the open page shows a step appended to RUN_DIR/metrics.jsonl after it was opened
Exit 0 when every check passes; prints FAIL lines otherwise.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

MAX_POINTS = 2000  # core/report/series.hpp: max_chart_points


class Browser:
    def __init__(self):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        self.profile = tempfile.mkdtemp(prefix="troupe-chromium-")
        binary = shutil.which("chromium") or shutil.which("chromium-browser")

        def wire_fds():
            # Copies first: a pipe end may itself be fd 3 or 4 (and dup2 onto itself would
            # leave it close-on-exec).
            read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage",  # containers often give /dev/shm only 64 MB
             "--remote-debugging-pipe", "--user-data-dir=" + self.profile, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=wire_fds,
            close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 860, "height": 1200, "deviceScaleFactor": 1, "mobile": False},
                  session=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.time() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=False, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, name, timeout=30):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def open(self, url):
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate",
                           {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def console_errors(self):
        errors = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                errors.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value")) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                errors.append(params["entry"].get("text", ""))
        return errors

    def screenshot(self, path):
        height = self.evaluate("document.documentElement.scrollHeight")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 860, "height": int(height), "deviceScaleFactor": 1, "mobile": False},
                  session=True)
        shot = self.call("Page.captureScreenshot", {"format": "png"}, session=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


# What the page drew: per chart, its rendered size and each series' drawn and stated points.
CHARTS_JS = """JSON.stringify(Array.from(document.querySelectorAll('svg.chart')).map(function (svg) {
  var box = svg.getBoundingClientRect();
  return {chart: svg.dataset.chart, width: box.width, height: box.height,
          bars: svg.querySelectorAll('rect.bar').length,
          series: Array.from(svg.querySelectorAll('polyline')).map(function (p) {
            return {name: p.dataset.series, drawn: p.points.numberOfItems,
                    stated: Number(p.dataset.points)};
          })};
}))"""

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def records(run_dir):
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def expected_run_series(run_dir):
    """The points each series of a run's page must hold, from metrics.jsonl read here."""
    recs = records(run_dir)
    steps = sum(1 for r in recs if r.get("event") == "step")
    evals = {}
    for r in recs:
        if r.get("event") == "eval":
            split = "validation" if "validation_loss" in r else "test"
            evals[split] = evals.get(split, 0) + 1
    expected = {}
    for suffix in ("_by_step", "_by_time"):
        loss = {"train loss (raw)": min(steps, MAX_POINTS), "train loss": min(steps, MAX_POINTS)}
        for split, n in evals.items():
            loss[split + " loss"] = n
        expected["loss" + suffix] = loss
        if evals:
            expected["accuracy" + suffix] = {s + " accuracy": n for s, n in evals.items()}
    expected["throughput"] = {"samples/s (raw)": min(steps, MAX_POINTS),
                              "samples/s": min(steps, MAX_POINTS)}
    members = {}
    for r in recs:
        if r.get("event") == "member_eval":
            name = f"member {r['member']}"
            members[name] = members.get(name, 0) + 1
    if members:
        expected["member_accuracy"] = members
    workers = {r["worker"] for r in recs if r.get("event") == "worker_step"}
    expected_bars = {"worker_time": 5 * len(workers)}  # compute, communication, apply, data wait, waiting
    staleness = {r["staleness"] for r in recs if r.get("event") == "applied"}
    if staleness:
        expected_bars["staleness"] = len(staleness)
    stages = {(r["pipeline"], r["stage"]) for r in recs if r.get("event") == "stage_step"}
    if stages:
        expected_bars["stages"] = 2 * len(stages)
    return expected, expected_bars


def expected_suite_series(suite_dir):
    with open(os.path.join(suite_dir, "summary.json")) as f:
        summary = json.load(f)
    loss, accuracy = {}, {}
    for job in summary["jobs"]:
        job_dir = os.path.join(suite_dir, job["name"])
        if not os.path.exists(os.path.join(job_dir, "metrics.jsonl")):
            continue
        recs = records(job_dir)
        loss[job["name"]] = min(sum(1 for r in recs if r.get("event") == "step"), MAX_POINTS)
        evals = sum(1 for r in recs if r.get("event") == "eval")
        if evals:
            accuracy[job["name"]] = evals
    expected = {"suite_loss": loss}
    if accuracy:
        expected["suite_accuracy"] = accuracy
    return expected, {}


def check_static(browser, url, folder, screenshot):
    browser.open(url)
    charts = json.loads(browser.evaluate(CHARTS_JS))
    by_id = {c["chart"]: c for c in charts}
    suite = os.path.exists(os.path.join(folder, "suite.json"))
    expected, expected_bars = (expected_suite_series if suite else expected_run_series)(folder)
    for chart_id, series in expected.items():
        chart = by_id.get(chart_id)
        check(chart is not None, f"{url}: no chart '{chart_id}' (charts: {sorted(by_id)})")
        if chart is None:
            continue
        check(chart["width"] > 100 and chart["height"] > 100,
              f"{chart_id}: rendered {chart['width']}x{chart['height']}")
        drawn = {s["name"]: s for s in chart["series"]}
        for name, n in series.items():
            s = drawn.get(name)
            check(s is not None, f"{chart_id}: no series '{name}' (has {sorted(drawn)})")
            if s is not None:
                check(s["drawn"] == n and s["stated"] == n,
                      f"{chart_id}/{name}: drew {s['drawn']} points (states {s['stated']}), "
                      f"the metrics hold {n}")
    for chart_id, bars in expected_bars.items():
        chart = by_id.get(chart_id)
        check(chart is not None and chart["bars"] == bars,
              f"{chart_id}: {chart and chart['bars']} bars, expected {bars}")
    for chart in charts:
        check(chart["width"] > 100 and chart["height"] > 50,
              f"{chart['chart']}: not rendered ({chart['width']}x{chart['height']})")
    errors = browser.console_errors()
    check(not errors, f"{url}: console errors: {errors}")
    browser.screenshot(screenshot)
    check(os.path.getsize(screenshot) > 10000, f"{screenshot}: screenshot too small")
    print(f"{url}: {len(charts)} charts checked, screenshot {screenshot}")


STEPS_SHOWN_JS = """(function () {
  var rows = document.querySelectorAll('#facts tr');
  for (var i = 0; i < rows.length; ++i)
    if (rows[i].querySelector('th').textContent === 'steps')
      return rows[i].querySelector('td').textContent;
  return null;
})()"""


def check_live(browser, url, run_dir):
    browser.open(url)
    recs = [r for r in records(run_dir) if r.get("event") == "step"]
    last = recs[-1]
    shown = browser.evaluate(STEPS_SHOWN_JS)
    check(shown == str(last["step"] + 1), f"live page shows {shown} steps before, expected "
                                          f"{last['step'] + 1}")
    # Written after the page was opened: one more step.
    new = dict(last, step=last["step"] + 1, t=last["t"] + 0.01, loss=last["loss"] * 0.9)
    with open(os.path.join(run_dir, "metrics.jsonl"), "a") as f:
        f.write(json.dumps(new) + "\n")
    want = str(new["step"] + 1)
    deadline = time.time() + 15
    while time.time() < deadline:
        shown = browser.evaluate(STEPS_SHOWN_JS)
        if shown == want:
            break
        time.sleep(0.2)
    check(shown == want, f"live page shows {shown} steps 15 s after a step was written, "
                         f"expected {want}")
    charts = json.loads(browser.evaluate(CHARTS_JS))
    loss = next((c for c in charts if c["chart"] == "loss_by_step"), None)
    raw = loss and next((s for s in loss["series"] if s["name"] == "train loss (raw)"), None)
    check(raw is not None and raw["drawn"] == min(len(recs) + 1, MAX_POINTS),
          f"live loss chart draws {raw and raw['drawn']} points after the new step, "
          f"expected {min(len(recs) + 1, MAX_POINTS)}")
    errors = browser.console_errors()
    check(not errors, f"live page: console errors: {errors}")
    print(f"{url}: showed step {want} written after it was opened")


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("static", "live"):
        print(__doc__)
        return 2
    browser = Browser()
    try:
        if sys.argv[1] == "static":
            check_static(browser, sys.argv[2], sys.argv[3], sys.argv[4])
        else:
            check_live(browser, sys.argv[2], sys.argv[3])
    finally:
        browser.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
