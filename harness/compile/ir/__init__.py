"""What the compiler generated: capture of the IR variants a run launched, their names,
the dump tree, and the fingerprint that tells whether two runs generated the same code.

    variants.py      a compiled variant as the compile listener describes it
    triton_hooks.py  the process-wide Triton hooks (compile, load, launch; sweep, timed)
    capture.py       IRCapture: one run's launches per case and role, and the dump
    dump.py          roles, index.tsv, naming.md, the tree written atomically
    naming.py        short stable variant names
    fingerprint.py   sha256 over scrubbed IR; convert_layout counts
    kernel_meta.py   per measured kernel metadata from index.tsv, and its A->B note
"""
