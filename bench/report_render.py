#!/usr/bin/python3
"""An hour-long fast run's report: metrics size under the budget against writing every record,
and the time from `troupe report DIR` to a page Chromium has drawn, against the 2 s target.

  bench/report_render.py [--build build] [--seconds 3600] [--steps-per-s 1000]
Prints one JSON object.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tests", "python"))
from report_browser import Browser  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--build", default=os.path.join(root, "build"))
parser.add_argument("--seconds", type=float, default=3600)
parser.add_argument("--steps-per-s", type=float, default=1000)
args = parser.parse_args()

with tempfile.TemporaryDirectory() as tmp:
    run = os.path.join(tmp, "run")
    sim = json.loads(subprocess.check_output(
        [os.path.join(args.build, "bench", "report_hour_bench"), run, "--seconds",
         str(args.seconds), "--steps-per-s", str(args.steps_per_s)]))
    t0 = time.time()
    subprocess.check_call([os.path.join(args.build, "apps", "troupe"), "report", run],
                          stdout=subprocess.DEVNULL)
    command_s = time.time() - t0
    browser = Browser()
    try:
        browser.open("about:blank")
        t1 = time.time()
        browser.open("file://" + os.path.join(run, "report.html"))
        # Layout done: every chart has a size.
        charts = browser.evaluate("document.querySelectorAll('svg.chart').length")
        browser.evaluate("document.body.getBoundingClientRect().height")
        browser_s = time.time() - t1
    finally:
        browser.close()
    total = command_s + browser_s
    print(json.dumps({
        "benchmark": "report_render",
        "simulated_s": sim["simulated_s"],
        "steps": sim["steps"],
        "metrics_mb": sim["metrics_mb"],
        "unthinned_metrics_mb": sim["unthinned_metrics_mb"],
        "size_ratio_to_unthinned": sim["ratio_to_unthinned"],
        "troupe_report_s": command_s,
        "chromium_load_s": browser_s,
        "charts": charts,
        "report_to_page_s": total,
        "target_s": 2.0,
        "ratio_to_target": total / 2.0,
    }, indent=2))
