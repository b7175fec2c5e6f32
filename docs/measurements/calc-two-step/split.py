"""Write DIR/{train,train_broad,test,train_two}.jsonl: the calculator's splits and train_broad's rows of two
operations (``steps`` 2), for GRPO on those alone. Usage: python split.py DIR"""

import json
import shutil
import sys
from pathlib import Path

import mcp_rl.datasets.arithmetic as arithmetic

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
source = Path(arithmetic.__file__).parent
for split in ("train", "train_broad", "test"):
    shutil.copy(source / f"{split}.jsonl", out / f"{split}.jsonl")
rows = [json.loads(line) for line in (source / "train_broad.jsonl").read_text().splitlines() if line]
two = [row for row in rows if row["steps"] == 2]
(out / "train_two.jsonl").write_text("".join(json.dumps(row) + "\n" for row in two))
print(f"{len(two)} of {len(rows)} train_broad rows have two operations")
