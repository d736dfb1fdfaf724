"""Writes the data files tests/e2e/table_data_test.sh feeds troupe (tests only).

  make_table_files.py OUT_DIR

OUT_DIR/reg_{train,test}.csv     a regression table: 6 features, the target "price" (in the middle
                                 of the header) a fixed linear function of them plus noise
OUT_DIR/cls_{train,test}.csv     3 classes (the "label" column, last), CRLF line endings, quoted
                                 numbers
OUT_DIR/multi_{train,test}.pt    multi-label tensors: x float32 [N, 8], y float32 [N, 4] of 0/1
OUT_DIR/vec_{train,test}.pt      regression on vectors: y float32 [N, 3]
and one bad CSV file per refusal the test checks (bad_*.csv).
"""
import csv
import os
import sys

import torch

out = sys.argv[1]
torch.manual_seed(7)


def write_csv(name, header, rows, line_end="\n", quote=False):
    with open(os.path.join(out, name), "w", newline="") as f:
        w = csv.writer(f, lineterminator=line_end,
                       quoting=csv.QUOTE_ALL if quote else csv.QUOTE_MINIMAL)
        w.writerow(header)
        w.writerows(rows)


# Regression: price = x . w + 0.5 + noise, the target between the features.
w = torch.tensor([1.5, -2.0, 0.5, 0.0, 1.0, -0.75])
header = ["a", "b", "c", "price", "d", "e", "f"]
for name, n in (("reg_train.csv", 2000), ("reg_test.csv", 500)):
    x = torch.randn(n, 6)
    y = x @ w + 0.5 + 0.1 * torch.randn(n)
    rows = [[f"{v:.6f}" for v in r[:3].tolist()] + [f"{t:.6f}"] +
            [f"{v:.6f}" for v in r[3:].tolist()] for r, t in zip(x, y)]
    write_csv(name, header, rows)

# Classification: which of three directions a row leans to most; quoted cells, CRLF.
directions = torch.randn(3, 5)
for name, n in (("cls_train.csv", 1500), ("cls_test.csv", 500)):
    x = torch.randn(n, 5)
    y = (x @ directions.T).argmax(1)
    rows = [[f"{v:.5f}" for v in r.tolist()] + [str(int(t))] for r, t in zip(x, y)]
    write_csv(name, ["x1", "x2", "x3", "x4", "x5", "label"], rows, "\r\n", quote=True)

# Multi-label: label j is on where feature pair (2j, 2j+1) sums above 0.
for name, n in (("multi_train.pt", 2000), ("multi_test.pt", 500)):
    x = torch.randn(n, 8)
    y = (x.reshape(n, 4, 2).sum(2) > 0).float()
    torch.save({"x": x, "y": y}, os.path.join(out, name))

# Vector targets: y = x A, float32 [N, 3].
a = torch.randn(4, 3)
for name, n in (("vec_train.pt", 1000), ("vec_test.pt", 300)):
    x = torch.randn(n, 4)
    torch.save({"x": x, "y": x @ a}, os.path.join(out, name))

good = ["x1,x2,label", "0.5,1.5,0", "1.0,-2.0,1"]


def bad(name, lines, raw=None):
    with open(os.path.join(out, name), "w", newline="") as f:
        f.write(raw if raw is not None else "\n".join(lines) + "\n")


bad("bad_no_label.csv", ["x1,x2,y", "0.5,1.5,0"])
bad("bad_text.csv", good[:2] + ["1.0,abc,1"])
bad("bad_fields.csv", good[:2] + ["1.0,2.0"])
bad("bad_empty.csv", [], raw="")
bad("bad_header_only.csv", ["x1,x2,label"])
bad("bad_quote.csv", good[:2] + ['"1.0,2.0,1'])
bad("bad_inf.csv", good[:2] + ["inf,2.0,1"])
bad("bad_fraction.csv", good[:2] + ["1.0,2.0,1.5"])
bad("bad_only_label.csv", ["label", "1", "0"])
bad("bad_empty_cell.csv", good[:2] + ["1.0,,1"])
bad("bad_other_header.csv", ["x1,x3,label", "0.5,1.5,0"])
bad("bad_huge.csv", good[:2] + ["1e999,2.0,1"])
bad("bad_big_label.csv", good[:2] + ["1.0,2.0,1000000"])
