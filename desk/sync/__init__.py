"""One desk on many machines: `desk clone`, `desk sync` (`run`), the merge drivers (`drivers`), what
runs after a merge (`settle`, `cases`, `stopped`), and GitPython's fetch and push (`remote`)."""
