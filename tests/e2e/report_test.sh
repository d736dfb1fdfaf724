#!/usr/bin/env bash
# End-to-end test of `troupe report`: real runs (sync, async, a 2-stage pipeline, a stacked
# ensemble, a suite over seeds) drawn as report.html and opened in headless Chromium, which must draw every chart with
# as many points as the metrics hold and log no console error (a screenshot of each page is kept
# in ARTIFACTS); the live page (--serve) shows a step written after it was opened; bad folders
# and addresses are refused with their name. Skips (77) where Chromium is not installed.
#   report_test.sh PATH/TO/troupe JOB.json ARTIFACTS
set -uo pipefail
troupe=$1
job=$2
artifacts=$3
source "$(dirname "$0")/../lib/harness.sh"
if ! command -v chromium >/dev/null; then
  skip "chromium is not installed (scripts/install_deps.sh --tests installs it)"
fi
browser=$(dirname "$0")/../python/report_browser.py
mkdir -p "$artifacts"

# run NAME ARGS...: a short run into $tmp/NAME; then its report and the page in the browser.
run_and_view() {
  local name=$1
  shift
  if ! "$troupe" run "$job" --out "$tmp/$name" --quiet "$@" >"$tmp/$name.log" 2>&1; then
    fail "$name: run failed"$'\n'"$(tail -5 "$tmp/$name.log")"
    return
  fi
  "$troupe" report "$tmp/$name" >"$tmp/$name.report.log" 2>&1
  check "$name: report" $? 0 "$tmp/$name.report.log" "wrote $tmp/$name/report.html"
  if /usr/bin/python3 "$browser" static "file://$tmp/$name/report.html" "$tmp/$name" \
    "$artifacts/report-$name.png"; then pass; else fail "$name: the page in Chromium"; fi
}

run_and_view sync
run_and_view async --set parallelism.policy=async
run_and_view pipeline --set parallelism.replicas=1 --set parallelism.stages=2 \
  --set parallelism.micro_batches=4 --set 'model.hidden=[64,32]'
run_and_view ensemble --set parallelism.replicas=1 --set ensemble.members=3
grep -q 'id="bubble"' "$tmp/pipeline/report.html" && pass || fail "pipeline: no bubble line"
grep -q 'data-chart="staleness"' "$tmp/async/report.html" && pass || fail "async: no staleness"
grep -q 'id="plan"' "$tmp/sync/report.html" && pass || fail "sync: the plan is not on the page"
# The final evaluation class by class: on the page (replicas and pipelines), and in the metrics
# a confusion record whose diagonal over its rows is the summary's test accuracy.
grep -q 'id="confusion"' "$tmp/sync/report.html" && pass || fail "sync: no confusion matrix"
grep -q 'id="per_class"' "$tmp/pipeline/report.html" && pass ||
  fail "pipeline: no per-class accuracy"
grep -q 'id="confusion"' "$tmp/ensemble/report.html" && pass ||
  fail "ensemble: no confusion matrix of the averaged prediction"
/usr/bin/python3 - "$tmp/sync" <<'PY' && pass || fail "sync: the confusion record does not match the summary"
import json, sys
folder = sys.argv[1]
records = [json.loads(line) for line in open(folder + "/metrics.jsonl")]
found = [r for r in records if r.get("event") == "confusion"]
assert len(found) == 1, f"{len(found)} confusion records"
c, summary = found[0], json.load(open(folder + "/summary.json"))
k, rows = c["classes"], sum(c["counts"])
right = sum(c["counts"][i * k + i] for i in range(k))
assert abs(right / rows - summary["test_accuracy"]) < 1e-9, (right / rows, summary["test_accuracy"])
print(f"confusion: {k} classes, {rows} rows, accuracy {right / rows:.4f}")
PY

# A suite over two seeds: overlaid curves, leaderboard, mean ± std, and each job's own page.
cat >"$tmp/suite.json" <<'JSON'
{
  "name": "report_suite",
  "model": {"type": "mlp", "hidden": [32], "activation": "tanh"},
  "data": {"type": "synthetic", "train_samples": 1024, "test_samples": 256},
  "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
  "training": {"steps": 40, "batch_size": 32, "eval_interval": 20},
  "jobs": [{"name": "small"}, {"name": "wide", "model": {"hidden": [64]}}],
  "sweep": {"seed": [1, 2]}
}
JSON
if "$troupe" run "$tmp/suite.json" --out "$tmp/suite" >"$tmp/suite.log" 2>&1; then
  "$troupe" report "$tmp/suite" >"$tmp/suite.report.log" 2>&1
  check "suite: report" $? 0 "$tmp/suite.report.log" "wrote $tmp/suite/report.html"
  if /usr/bin/python3 "$browser" static "file://$tmp/suite/report.html" "$tmp/suite" \
    "$artifacts/report-suite.png"; then pass; else fail "suite: the page in Chromium"; fi
  # Each leaderboard row says what its job sets on the base, whatever the job is named.
  for f in 'id="leaderboard"' 'id="settings"' 'href="./wide-seed%3D2/report.html"' \
    '<th>settings</th>' ', seed=2</td>'; do
    grep -qF "$f" "$tmp/suite/report.html" && pass || fail "suite page lacks $f"
  done
  [ -s "$tmp/suite/wide-seed=2/report.html" ] && pass || fail "suite: no page for job wide-seed=2"
else
  fail "suite: run failed"$'\n'"$(tail -5 "$tmp/suite.log")"
fi

# Live: a run still going (no summary yet) served on a free port; a step appended after the
# page opened must show up; Ctrl-C ends the server with exit 0.
cp -r "$tmp/sync" "$tmp/live"
rm "$tmp/live/summary.json"
start serve "$troupe" report "$tmp/live" --serve 127.0.0.1:0
serve_pid=$last_pid
for _ in $(seq 50); do grep -q "http://" "$tmp/serve.log" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$tmp/serve.log" | head -1)
if [ -n "$url" ] && /usr/bin/python3 "$browser" live "$url" "$tmp/live"; then pass; else
  fail "live page"$'\n'"$(cat "$tmp/serve.log")"
fi
[ -n "$url" ] && curl_like=$(/usr/bin/python3 -c "import urllib.request,sys
try: urllib.request.urlopen(sys.argv[1] + '../../etc/report.html'); print('served')
except Exception as e: print(getattr(e, 'code', e))" "${url}x/")
[ "${curl_like:-}" = "404" ] && pass || fail "a job outside the folder answered: ${curl_like:-}"
# Hostile bytes on the port (garbage, a 1 MB request line, a cut-off request): the server
# goes on answering.
/usr/bin/python3 - "$url" <<'PY' && pass || fail "the server stopped answering after garbage"
import os, socket, sys, urllib.request
host, port = sys.argv[1].split("//")[1].rstrip("/").split(":")
for payload in (os.urandom(4096), b"GET /" + b"a" * (1 << 20) + b" HTTP/1.1\r\n\r\n",
                b"GET /version HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n"):
    s = socket.create_connection((host, int(port)), timeout=5)
    try:
        s.sendall(payload)
        s.settimeout(2)
        s.recv(100)
    except OSError:
        pass
    s.close()
sys.exit(0 if urllib.request.urlopen(sys.argv[1] + "version", timeout=5).status == 200 else 1)
PY
kill -INT "$serve_pid"
finish "$serve_pid" 10
check "serve: Ctrl-C" "$status" 0 "$tmp/serve.log" "serving the report of"

# Bad input: each names what is wrong.
"$troupe" report "$tmp/none" >"$tmp/bad1.log" 2>&1
check "missing folder" $? 2 "$tmp/bad1.log" "$tmp/none: not a folder"
mkdir "$tmp/empty"
"$troupe" report "$tmp/empty" >"$tmp/bad2.log" 2>&1
check "empty folder" $? 1 "$tmp/bad2.log" "holds neither metrics.jsonl nor summary.json"
cp -r "$tmp/sync" "$tmp/torn"
printf '{"status": "succ' >"$tmp/torn/summary.json"
"$troupe" report "$tmp/torn" >"$tmp/bad3.log" 2>&1
check "torn summary" $? 1 "$tmp/bad3.log" "$tmp/torn/summary.json: not JSON"
cp -r "$tmp/sync" "$tmp/noisy"
printf 'garbage\n\x00\xff\n' >>"$tmp/noisy/metrics.jsonl"
"$troupe" report "$tmp/noisy" >"$tmp/bad4.log" 2>&1
check "garbage lines" $? 0 "$tmp/bad4.log" "wrote"
grep -q "2 line(s) held no record" "$tmp/noisy/report.html" && pass || fail "skipped lines unsaid"
"$troupe" report "$tmp/sync" --serve 127.0.0.1:99999 >"$tmp/bad5.log" 2>&1
check "bad port" $? 2 "$tmp/bad5.log" "--serve"
# An empty address ("$ADDR" unset) wrote the file instead of serving.
"$troupe" report "$tmp/sync" --serve "" >"$tmp/bad6.log" 2>&1
check "empty --serve" $? 2 "$tmp/bad6.log" "--serve: an empty address (is a variable unset?)"
port=$(grep -o ':[0-9]*/' <<<"$url" | tr -d ':/')
start busy "$troupe" report "$tmp/sync" --serve "127.0.0.1:${port:-1}"
finish "$last_pid" 10
check "port in use" "$status" 2 "$tmp/busy.log" "cannot listen on 127.0.0.1:${port:-1}"
ls "$tmp/sync" | grep -q '\.tmp' && fail "a temporary file was left" || pass

report report_test
