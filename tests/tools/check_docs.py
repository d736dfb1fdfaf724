#!/usr/bin/env python3
"""Keeps the documentation and the job-file parser in agreement, and the docs' links working.

    check_docs.py PATH/TO/troupe REPOSITORY_ROOT

1. Asks the parser, black-box, which keys it accepts. The parser answers a key it does not know
   with "/section/key: unknown key (known: a, b, c)", so for every section and every variant of a
   section (model types, data types, optimizer types, learning-rate schedule types, policies,
   schedule phases) this writes a small job file with the key `zz_probe` in it, runs
   `troupe validate FILE` and reads the known lists from stderr. The variants themselves are asked
   for too: a bad `type`/`policy` is answered with 'must be one of "a", "b"', so a new model type
   or policy is probed without editing this file. A probe that is not answered with the expected
   "unknown key" line fails the test: it cannot pass by finding nothing.
2. Reads the key tables of docs/*.md: a table whose header's first cell is "key"; its first column
   names keys as backticked dotted paths (`optimizer.schedule.min_lr`, several separated by
   commas), `[]` standing for an element of an array (`parallelism.phases[].steps`).
3. Checks that every accepted key is in a key table (an object of keys, such as `model`, counts as
   documented when keys inside it are), that every key a table names is accepted, and that no key
   is named twice. A documented key the probes did not list (a suite's own keys such as
   `max_concurrent`, which no "known" list names) is given a value of the wrong type in a suite
   file: it is accepted when the answer is a complaint about its value, not "unknown key".
4. Checks every relative link in README.md and docs/*.md: the file must exist inside the
   repository, and a #anchor must be a heading of that file (GitHub's slugs).

Prints what it found; exits 1 naming each mismatch, 0 when there is none.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

PROBE = "zz_probe"
BAD_CHOICE = "zz_probe_choice"

# Sections whose keys depend on a discriminating key: (JSON path of the object, the key).
# "[]" is an array element; the probe puts one element there.
DISCRIMINATED = [
    (("model",), "type"),
    (("data",), "type"),
    (("optimizer",), "type"),
    (("optimizer", "schedule"), "type"),
    (("parallelism",), "policy"),
    (("parallelism", "phases[]"), "policy"),
]

# Sections whose keys do not depend on a variant ("" is the top level).
PLAIN_SECTIONS = [
    (),
    ("training",),
    ("training", "early_stopping"),
    ("ensemble",),
    ("cluster",),
    ("checkpoint",),
    ("faults",),
]

# Sections of one data type each, probed a document apiece (the types differ): the section and
# the data it sits in.
DATA_SECTIONS = {
    ("data", "train"): {"type": "npy"},
    ("data", "test"): {"type": "npy"},
    ("data", "image"): {"type": "image_folder", "train": "a", "test": "b"},
    ("data", "augment"): {"type": "image_folder", "train": "a", "test": "b",
                          "image": {"size": [8, 8]}},
}

# What a section needs beside the probe so that the parser reads it at all.
CONTEXT = {
    ("parallelism", "phases[]"): {"parallelism": {"policy": "schedule"}},
    ("training", "early_stopping"): {"data": {"validation": 0.1}},
}

# A suite file: its own sections that answer with a known list.
SUITE_PROBE = {
    "name": "probe",
    "data": {"type": "synthetic", "validation": 0.1},
    "training": {"steps": 1},
    "devices": [{"device": "cpu", "threads": 1, PROBE: 1}],
    "jobs": [{"name": "a", "limits": {"memory_mb": 100, PROBE: 1}}],
    "stop_losers": {"after": 1, PROBE: 1},
}
SUITE_BASE = {
    "name": "probe",
    "data": {"type": "synthetic"},
    "training": {"steps": 1},
    "jobs": [{"name": "a"}],
}

ERROR_LINE = re.compile(
    r"^error: [^:]*: (?:job \S+(?: \((?P<where>[^)]*)\))?: )?(?P<path>/\S*): (?P<what>.*)$")
UNKNOWN = re.compile(r'^unknown key \((?:did you mean "[^"]*"\? )?known: (?P<known>.*)\)$')
CHOICES = re.compile(r"^must be one of (?P<choices>.*), got ")
KEY_SPELLING = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[\])?)*$")

problems = []


def problem(text):
    problems.append(text)
    print(f"MISMATCH: {text}")


def fatal(text):
    print(f"PROBE FAILED: {text}", file=sys.stderr)
    sys.exit(1)


# --- running troupe ---------------------------------------------------------------------------

def validate(troupe, document, workdir):
    """Runs `troupe validate` on the JSON document; returns its error lines as (path, what)."""
    path = os.path.join(workdir, "probe.json")
    with open(path, "w") as f:
        json.dump(document, f)
    # The binary may be rebuilt while this runs: retry while it is missing, busy or crashing.
    last = None
    for attempt in range(30):
        try:
            run = subprocess.run([troupe, "validate", path], cwd=workdir, capture_output=True,
                                 text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            last = repr(e)
            time.sleep(2)
            continue
        if run.returncode in (0, 2):
            lines = []
            for line in run.stderr.splitlines():
                m = ERROR_LINE.match(line)
                if m:
                    lines.append(((m.group("where") or "") + m.group("path"), m.group("what")))
                    if m.group("where") is not None:
                        # A suite's job: its path within the job (the suite's base and the
                        # entry merged) names the base's keys too.
                        lines.append((m.group("path"), m.group("what")))
            return run.returncode, lines, run.stderr
        last = f"exit status {run.returncode}: {run.stderr.strip()[-500:]}"
        time.sleep(2)
    fatal(f"{troupe} validate did not answer ({last}) for {json.dumps(document)}")


# --- building probe documents -----------------------------------------------------------------

def put(document, section, inner):
    """Returns a copy of document with the object at section (a path) merged with inner."""
    document = json.loads(json.dumps(document))
    node = document
    for part in section:
        if part.endswith("[]"):
            name = part[:-2]
            node.setdefault(name, [{}])
            node = node[name][0]
        else:
            node = node.setdefault(part, {})
    node.update(inner)
    return document


def probe_paths(node, pointer=""):
    """JSON pointers of the objects holding the probe key."""
    found = []
    if isinstance(node, dict):
        if PROBE in node:
            found.append(pointer)
        for k, v in node.items():
            found += probe_paths(v, f"{pointer}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += probe_paths(v, f"{pointer}/{i}")
    return found


def dotted(pointer):
    """'/parallelism/phases/0' -> 'parallelism.phases[]'."""
    out = []
    for part in pointer.strip("/").split("/") if pointer.strip("/") else []:
        if part.isdigit() and out:
            out[-1] += "[]"
        else:
            out.append(part)
    return ".".join(out)


def pointer_of(section):
    parts = []
    for p in section:
        parts += [p[:-2], "0"] if p.endswith("[]") else [p]
    return "/" + "/".join(parts) if parts else ""


def choices_of(troupe, workdir, discriminators):
    """The values each (section, key) takes, read from the parser's 'must be one of' answers."""
    document = {}
    for section, key in discriminators:
        document = put(document, section, {key: BAD_CHOICE})
        for extra_section, extra in CONTEXT.get(section, {}).items():
            document.setdefault(extra_section, {}).update(extra)
    _, lines, stderr = validate(troupe, document, workdir)
    found = {}
    for section, key in discriminators:
        want = pointer_of(section) + "/" + key
        for path, what in lines:
            m = CHOICES.match(what)
            if path == want and m:
                found[(section, key)] = re.findall(r'"([^"]*)"', m.group("choices"))
        if (section, key) not in found:
            fatal(f"a bad {'.'.join(section)}.{key} was not answered with 'must be one of ...' "
                  f"at {want}; troupe said:\n{stderr}")
    return found


def run_probe(troupe, workdir, document, labels, accepted, sections):
    """Validates a document holding probes; adds each section's known keys to accepted.
    labels: JSON pointer of each object holding a probe -> what it probes."""
    expected = set(probe_paths(document))
    if expected != set(labels):
        fatal(f"probe document and labels disagree: {sorted(expected)} / {sorted(labels)}")
    _, lines, stderr = validate(troupe, document, workdir)
    answered = {}
    for path, what in lines:
        m = UNKNOWN.match(what)
        if m and path.endswith("/" + PROBE):
            answered[path[: -len(PROBE) - 1]] = [k.strip() for k in m.group("known").split(",")]
    for pointer in sorted(expected):
        known = answered.get(pointer)
        if not known or PROBE in known:
            fatal(f"{labels[pointer]}: expected '{pointer}/{PROBE}: unknown key (known: ...)' "
                  f"from troupe validate on {json.dumps(document)}, got:\n{stderr}")
        section = dotted(pointer)
        sections.add(section)
        for k in known:
            key = f"{section}.{k}" if section else k
            accepted.setdefault(key, set()).add(labels[pointer])
        print(f"  {labels[pointer]:40} {', '.join(known)}")


def accepted_keys(troupe, workdir):
    accepted, sections = {}, set()
    print("keys the parser accepts (troupe validate, probing each section and variant):")

    # Sections without variants, all in one file.
    document, labels = {}, {}
    for section in PLAIN_SECTIONS:
        document = put(document, section, {PROBE: 1})
        for extra_section, extra in CONTEXT.get(section, {}).items():
            document.setdefault(extra_section, {}).update(extra)
        labels[pointer_of(section)] = ".".join(section) or "(top level)"
    run_probe(troupe, workdir, document, labels, accepted, sections)
    for section, data in DATA_SECTIONS.items():
        document = put({"data": data}, section, {PROBE: 1})
        run_probe(troupe, workdir, document, {pointer_of(section): ".".join(section)}, accepted,
                  sections)

    # Sections with variants: file i probes the i-th variant of each such section at once.
    phases = ("parallelism", "phases[]")
    others = [d for d in DISCRIMINATED if d[0] != phases]
    choices = choices_of(troupe, workdir, others)
    for i in range(max(len(c) for c in choices.values())):
        document, labels = {}, {}
        for (section, key), values in choices.items():
            if i < len(values):
                document = put(document, section, {key: values[i], PROBE: 1})
                labels[pointer_of(section)] = f"{'.'.join(section)} ({key} {values[i]})"
        run_probe(troupe, workdir, document, labels, accepted, sections)

    # Schedule phases: every variant as a phase with steps, and as the last phase.
    phase_key = dict(DISCRIMINATED)[phases]
    phase_choices = choices_of(troupe, workdir, [(phases, phase_key)])[(phases, phase_key)]
    for j, last in enumerate(phase_choices):
        listed = [{phase_key: c, "steps": 5, PROBE: 1} for c in phase_choices] if j == 0 else \
            [{phase_key: phase_choices[0], "steps": 5}]
        listed.append({phase_key: last, PROBE: 1})
        document = {"parallelism": {"policy": "schedule", "phases": listed}}
        labels = {f"/parallelism/phases/{n}": f"parallelism.phases[] ({phase_key} {p['policy']}"
                  f"{', last' if n == len(listed) - 1 else ''})"
                  for n, p in enumerate(listed) if PROBE in p}
        run_probe(troupe, workdir, document, labels, accepted, sections)

    labels = {p: f"suite file: {dotted(p)}" for p in probe_paths(SUITE_PROBE)}
    run_probe(troupe, workdir, SUITE_PROBE, labels, accepted, sections)
    return accepted, sections


def accepted_in_suite(troupe, workdir, key):
    """Whether a suite file takes key: given a value of the wrong type, is it refused for its
    value (accepted) or as an unknown key? None when the answer does not name it."""
    parts = key.split(".")
    pointer = pointer_of(tuple(parts))
    for bad in ("zz_bad", {"zz_bad": [1]}, -1):
        document = put(SUITE_BASE, tuple(parts[:-1]), {parts[-1]: bad})
        _, lines, _ = validate(troupe, document, workdir)
        named = [(p, w) for p, w in lines if p == pointer or p.startswith(pointer + "/")]
        if named:
            return not any(p == pointer and UNKNOWN.match(w) for p, w in named)
    return None


# --- the docs' key tables ---------------------------------------------------------------------

def outside_fences(text):
    """(line number, line) of the lines not inside ``` blocks."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if not inside:
            yield number, line


def cells(line):
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def documented_keys(root):
    documented = {}
    docs = os.path.join(root, "docs")
    for name in sorted(os.listdir(docs)):
        if not name.endswith(".md"):
            continue
        rel = f"docs/{name}"
        in_key_table, header_seen = False, False
        for number, line in outside_fences(open(os.path.join(docs, name)).read()):
            if not line.lstrip().startswith("|"):
                in_key_table, header_seen = False, False
                continue
            row = cells(line)
            if not header_seen:
                header_seen = True
                in_key_table = row[0].lower() == "key"
                continue
            if not in_key_table or set(row[0]) <= set("-: "):
                continue
            spans = re.findall(r"`([^`]*)`", row[0])
            if not spans:
                problem(f"{rel}:{number}: a key table row names no `key`: {row[0]}")
            for span in spans:
                if not KEY_SPELLING.match(span):
                    problem(f"{rel}:{number}: `{span}` is not written as a dotted key "
                            "(section.key, [] for an array's element)")
                elif span in documented:
                    problem(f"{rel}:{number}: `{span}` is documented twice (also at "
                            f"{documented[span]})")
                else:
                    documented[span] = f"{rel}:{number}"
    return documented


def compare_keys(troupe, workdir, accepted, sections, documented):
    def is_object(key):
        return key in sections or key + "[]" in sections

    def documented_inside(key):
        return any(d.startswith(key + ".") or d.startswith(key + "[].") for d in documented)

    for key in sorted(accepted):
        if key in documented:
            continue
        if is_object(key) and documented_inside(key):
            continue
        problem(f"`{key}` is accepted by the parser ({', '.join(sorted(accepted[key]))}) but no "
                "key table in docs/ names it")
    suite_only = []
    for key, where in sorted(documented.items()):
        if key in accepted or key in sections or key + "[]" in sections:
            continue
        parent = key.rpartition(".")[0]
        if parent and parent in sections:  # the top level of a suite file takes more
            takes = sorted(k.rpartition(".")[2] for k in accepted if k.rpartition(".")[0] == parent)
            problem(f"{where}: `{key}` is documented but the parser does not accept it "
                    f"({parent} takes: {', '.join(takes)})")
            continue
        verdict = accepted_in_suite(troupe, workdir, key)
        if verdict is None:
            problem(f"{where}: `{key}` is documented, but neither a known list names it nor does "
                    "troupe validate answer for it in a suite file")
        elif not verdict:
            problem(f"{where}: `{key}` is documented but the parser calls it an unknown key")
        else:
            suite_only.append(key)
    if suite_only:
        print("documented keys no known list names, accepted in a suite file (a wrong-typed value "
              f"is refused for its value): {', '.join(suite_only)}")


# --- links ------------------------------------------------------------------------------------

def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in outside_fences(open(path).read()):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        cache[path] = found
    return cache[path]


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")


def check_links(root):
    files = [os.path.join(root, "README.md")]
    files += [os.path.join(root, "docs", n) for n in sorted(os.listdir(os.path.join(root, "docs")))
              if n.endswith(".md")]
    root_real = os.path.realpath(root)
    count = 0
    for source in files:
        rel = os.path.relpath(source, root)
        for number, line in outside_fences(open(source).read()):
            line = re.sub(r"`[^`]*`", "", line)  # code spans hold no links
            targets = [m.group(1) for m in LINK.finditer(line)]
            m = REFERENCE.match(line)
            if m:
                targets.append(m.group(1))
            for target in targets:
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # http:, https:, mailto:
                count += 1
                file_part, _, anchor = target.partition("#")
                path = source if not file_part else os.path.normpath(
                    os.path.join(os.path.dirname(source), file_part))
                real = os.path.realpath(path)
                if os.path.commonpath([root_real, real]) != root_real:
                    problem(f"{rel}:{number}: link {target} leads outside the repository")
                    continue
                if not os.path.exists(path):
                    problem(f"{rel}:{number}: link {target}: no file {os.path.relpath(path, root)}")
                    continue
                if anchor and path.endswith(".md") and anchor not in anchors(path):
                    problem(f"{rel}:{number}: link {target}: {os.path.relpath(path, root)} has "
                            f"no heading #{anchor}")
    print(f"links checked in README.md and docs/*.md: {count}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    troupe, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.path.isdir(os.path.join(root, "docs")):
        fatal(f"{root} has no docs/ folder")
    with tempfile.TemporaryDirectory(prefix="check_docs.") as workdir:
        accepted, sections = accepted_keys(troupe, workdir)
        if len(accepted) < 20:
            fatal(f"only {len(accepted)} keys found; the probes did not work")
        print(f"accepted keys: {len(accepted)}")
        documented = documented_keys(root)
        print(f"keys named by the key tables in docs/: {len(documented)}")
        compare_keys(troupe, workdir, accepted, sections, documented)
    check_links(root)
    if problems:
        print(f"\n{len(problems)} mismatch(es) between docs/, README.md and troupe", file=sys.stderr)
        return 1
    print("docs, README and the job-file parser agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
