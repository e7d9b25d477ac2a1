"""Copy a finished (or in-progress) training run's model into model/weights/<name>, checking that it loads.

    python bench/ship_model.py runs/tiny-gpt/model model/weights/tiny-gpt [--snapshots 100,400,1000,2000]

Keeps only the listed snapshots (and their entries in the meta), so the shipped folder stays small.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checkpoints import load_checkpoint  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--snapshots", default=None, help="comma-separated steps to keep (default: all)")
    args = parser.parse_args()
    tmp = args.target.with_name(args.target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(args.source, tmp)
    document = json.loads((tmp / "config.json").read_text(encoding="utf-8"))
    meta = document["meta"]
    if args.snapshots is not None and "snapshots" in meta:
        keep = {int(s) for s in args.snapshots.split(",") if s}
        kept = [s for s in meta["snapshots"] if s["step"] in keep]
        for snap in meta["snapshots"]:
            if snap["step"] not in keep:
                (tmp / snap["file"]).unlink(missing_ok=True)
        meta["snapshots"] = kept
        (tmp / "config.json").write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    for snap in meta.get("snapshots", []):
        if not (tmp / snap["file"]).is_file():
            raise SystemExit(f"snapshot {snap['file']} is missing")
    load_checkpoint(tmp)  # must load
    shutil.rmtree(args.target, ignore_errors=True)
    tmp.rename(args.target)
    size = sum(p.stat().st_size for p in args.target.rglob("*") if p.is_file())
    print(
        f"shipped {args.target}: {size / 1e6:.1f} MB, step {meta.get('training', {}).get('steps')}, "
        f"val loss {meta.get('val_loss')}, snapshots {[s['step'] for s in meta.get('snapshots', [])]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
