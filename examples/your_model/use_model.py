"""Uses what troupe trained: final_model.pt as a module, final_weights.pt in your own module.

  /usr/bin/python3 use_model.py RUN_DIR [DATA_DIR]

DATA_DIR (default: the current folder) holds test.pt from make_model.py. Prints the test
accuracy of final_model.pt and of your own resnet() holding final_weights.pt (the same figure),
and the accuracy summary.json reports.
"""
import json
import os
import sys

import torch

from make_model import resnet


def accuracy(model, data):
    model.eval()  # BatchNorm uses the running statistics troupe trained
    with torch.no_grad():
        x = data["x"].float() / 255  # what troupe does to uint8 inputs
        # 250 rows at a time: one forward over all 10,000 took PyTorch on 2 cores many times
        # longer (a CNN's activations for them are far past the caches).
        outputs = torch.cat([model(rows) for rows in x.split(250)])
        return (outputs.argmax(1) == data["y"]).float().mean().item()


def main():
    run = sys.argv[1]
    data = torch.load(os.path.join(sys.argv[2] if len(sys.argv) > 2 else ".", "test.pt"))
    trained = torch.jit.load(os.path.join(run, "final_model.pt"))
    mine = resnet()
    mine.load_state_dict(torch.load(os.path.join(run, "final_weights.pt")), strict=True)
    reported = json.load(open(os.path.join(run, "summary.json")))["test_accuracy"]
    print(f"final_model.pt: {accuracy(trained, data):.4f}, your resnet() with final_weights.pt: "
          f"{accuracy(mine, data):.4f}, summary.json: {reported:.4f}")


if __name__ == "__main__":
    main()
