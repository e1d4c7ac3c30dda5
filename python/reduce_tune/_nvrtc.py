"""Where NVRTC comes from. The extension opens the NVRTC it was built against (its soname, on the
loader path or in the build's CUDA toolkit) or ``$REDUCE_TUNE_NVRTC``; where neither is there, it
opens one of the NVRTCs that the ``nvidia-cuda-nvrtc`` wheels install into site-packages
(``nvidia/cu13/lib/libnvrtc.so.13``, ``nvidia/cuda_nvrtc/lib/libnvrtc.so.12`` or ``.so.11.2``),
found here at import: only names in folders, nothing is loaded until a GPU is first used."""
from __future__ import annotations

import os
import re
import sys
from typing import List, Sequence, Tuple

_SONAME = re.compile(r"libnvrtc\.so\.(\d+)(?:\.(\d+))?$")


def wheel_candidates(paths: Sequence[str], soname: str) -> List[str]:
    """The libnvrtc.so.* files of nvidia/*/lib under `paths` (sys.path's folders): one named
    `soname` (the build's) first, then the newest CUDA version first."""
    found: List[Tuple[bool, Tuple[int, int], str]] = []
    seen = set()
    for p in paths:
        base = os.path.join(p or os.curdir, "nvidia")
        if not os.path.isdir(base):
            continue
        try:
            subs = sorted(os.listdir(base))
        except OSError:
            continue
        for sub in subs:
            lib = os.path.join(base, sub, "lib")
            try:
                names = os.listdir(lib)
            except OSError:
                continue
            for name in names:
                m = _SONAME.match(name)
                full = os.path.realpath(os.path.join(lib, name))
                if m and full not in seen:
                    seen.add(full)
                    found.append((name != soname, (-int(m[1]), -int(m[2] or 0)), full))
    return [f for _, _, f in sorted(found)]


def candidates() -> List[str]:
    from . import _ext
    return wheel_candidates(sys.path, _ext.nvrtc_soname)
