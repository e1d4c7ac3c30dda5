"""``python -m reduce_tune ...`` and the ``reduce-tune`` command: the C++ CLI installed with the
package (reduce_tune/bin/reduce-tune), run with the same arguments."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional


def cli_path() -> Path:
    """Where the package's reduce-tune executable is."""
    return Path(__file__).resolve().parent / "bin" / "reduce-tune"


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    exe = cli_path()
    if not os.access(exe, os.X_OK):
        print(f"reduce_tune: the reduce-tune CLI is missing from this installation ({exe})",
              file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(str(exe), [str(exe), *args])  # replaces this process; its exit code is the CLI's
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
