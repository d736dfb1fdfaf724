#!/usr/bin/python3
"""The layers of the source tree hold: dependencies point one way (apps -> actors -> messages ->
core), core/ includes nothing above it (actors/, messages/, apps/, gpu/) and no CAF header, no two
folders of core/ include each other, directly or around a loop, and the folders of actors/ keep
their order (links, exchange, workers, driver, cluster, then actors/run_job: each includes only
those before it; actors/FOLDER/README.md says what lives there). Prints each include that breaks
a rule, with the loop it closes, and exits 1; prints the folder order and exits 0 when all hold.
  check_layers.py REPOSITORY_ROOT
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
include = re.compile(r'#\s*include\s*[<"]([^>"]+)[>"]')
above_core = ("actors/", "messages/", "apps/", "gpu/")
problems = []
edges = {}  # folder of core/ -> {folder it includes: first include seen}


def folder_of(path):
    parts = os.path.relpath(path, os.path.join(root, "core")).split(os.sep)
    return parts[0] if len(parts) > 1 else "core"


for directory, _, files in os.walk(os.path.join(root, "core")):
    for name in sorted(files):
        if not name.endswith((".cpp", ".hpp", ".h")):
            continue
        path = os.path.join(directory, name)
        source = folder_of(path)
        for number, line in enumerate(open(path, errors="replace"), 1):
            m = include.search(line)
            if not m:
                continue
            target = m.group(1)
            where = f"{os.path.relpath(path, root)}:{number}"
            if target.startswith(above_core):
                problems.append(f"{where} includes {target}: core/ includes nothing above it")
            if target.startswith("caf/"):
                problems.append(f"{where} includes {target}: core/ knows nothing of CAF")
            if target.startswith("core/"):
                parts = target.split("/")
                dest = parts[1] if len(parts) > 2 else "core"
                if dest != source and "core" not in (source, dest):
                    edges.setdefault(source, {}).setdefault(dest, f"{where} includes {target}")

# actors/: each folder includes only the folders before it.
actor_order = ["links", "exchange", "workers", "driver", "cluster", ""]  # "": actors/ itself
for directory, _, files in os.walk(os.path.join(root, "actors")):
    folder = os.path.relpath(directory, os.path.join(root, "actors"))
    folder = "" if folder == "." else folder.split(os.sep)[0]
    if folder not in actor_order:
        problems.append(f"actors/{folder}/: a folder the layers do not know; add it to "
                        "tests/tools/check_layers.py's order and give it a README.md")
        continue
    for name in sorted(files):
        if not name.endswith((".cpp", ".hpp")):
            continue
        path = os.path.join(directory, name)
        for number, line in enumerate(open(path, errors="replace"), 1):
            m = include.search(line)
            if not m or not m.group(1).startswith("actors/"):
                continue
            parts = m.group(1).split("/")
            dest = parts[1] if len(parts) > 2 else ""
            if actor_order.index(dest) > actor_order.index(folder):
                problems.append(f"{os.path.relpath(path, root)}:{number} includes {m.group(1)}: "
                                f"actors/{folder or ''} may include only "
                                + (", ".join(f"actors/{f}/" for f in actor_order[:actor_order.index(folder)])
                                   or "no other folder of actors/"))

# Loops: a depth-first walk; a back edge closes a cycle, reported with the includes along it.
state, stack = {}, []


def visit(node):
    state[node] = "open"
    stack.append(node)
    for dest in sorted(edges.get(node, {})):
        if state.get(dest) == "open":
            cycle = stack[stack.index(dest):] + [dest]
            steps = [edges[a][b] for a, b in zip(cycle, cycle[1:])]
            problems.append("folder loop in core/: " + " -> ".join(cycle) + "\n    " +
                            "\n    ".join(steps))
        elif dest not in state:
            visit(dest)
    stack.pop()
    state[node] = "done"


for folder in sorted(edges):
    if folder not in state:
        visit(folder)

if problems:
    for p in problems:
        print(p)
    sys.exit(1)

# The order the folders build on each other, lowest first.
order, placed = [], set()
folders = sorted(set(edges) | {d for ds in edges.values() for d in ds})
while len(order) < len(folders):
    for f in folders:
        if f not in placed and all(d in placed for d in edges.get(f, {})):
            order.append(f)
            placed.add(f)
print("core/ folders, each including only those before it:", " ".join(order))
