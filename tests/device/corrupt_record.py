"""Copy a record run and break one recorded config (a block size that is not a power of two),
so a replay of it must fall back with compile_failed. Usage: corrupt_record.py SRC DST"""
import json
import shutil
import sys
from pathlib import Path

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
shutil.copytree(src, dst)
path = dst / "autotune" / "records.json"
records = json.loads(path.read_text())
for kernel, keys in records["kernels"].items():
    for key, config in keys.items():
        for name, value in config["kwargs"].items():
            if isinstance(value, int) and value >= 16 and value & (value - 1) == 0:
                config["kwargs"][name] = value + 8
                path.write_text(json.dumps(records, indent=1))
                print(f"corrupted {kernel} key={key}: {name} {value} -> {value + 8}")
                sys.exit(0)
sys.exit("no power-of-two block size found to corrupt")
