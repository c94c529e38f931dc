"""What binlake may delete or overwrite: only folders and files it can prove are its own, never through a
symbolic link.

A lake (or landing) root may itself be a link (``/data/lake -> /mnt/disk7/lake`` is an operator's choice), but
nothing below it is followed: a table folder, ``_staging``, a snapshot's table folder that is a link, or a link
anywhere inside a table folder, may lead to files of someone else (a link planted by mistake or on purpose), and
``rm -r``, VACUUM or a Spark overwrite would delete them there. Callers refuse such a path with their package's
typed error, or skip it with the reason and count it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from binlake.folders import link_problem, link_target
from binlake.lake.errors import LakeError

__all__ = ["LINK_ADVICE", "OutsideLakeError", "link_problem", "links_inside", "scratch_folder", "tree_problem"]

LINK_ADVICE = (
    "binlake never deletes or overwrites through a symbolic link: replace the link with a real folder "
    "(or move what it points to inside) and rerun"
)


class OutsideLakeError(LakeError):
    """A path binlake would write or delete is a symbolic link, or leads outside the lake root."""


def links_inside(folder: str | os.PathLike[str], limit: int = 3) -> list[str]:
    """Up to ``limit`` symbolic links anywhere below ``folder`` (files or folders; none is followed), as paths
    relative to it, sorted."""
    found: list[str] = []
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):
            if os.path.islink(os.path.join(top, name)):
                found.append(os.path.relpath(os.path.join(top, name), folder))
                if len(found) >= limit:
                    return sorted(found)
    return sorted(found)


def tree_problem(root: str | os.PathLike[str], folder: str | os.PathLike[str]) -> Optional[str]:
    """:func:`link_problem` of ``folder``, else a link inside it (VACUUM and ``rm -r`` in some tools follow
    them), else None."""
    problem = link_problem(root, folder)
    if problem is None:
        inside = links_inside(folder)
        if inside:
            problem = (
                f"{folder} holds symbolic link(s) ({', '.join(inside)}{', ...' if len(inside) >= 3 else ''})"
                f" that vacuum would follow"
            )
    return problem


def scratch_folder(base: str, *parts: str, check_base: bool = True) -> Path:
    """``base/parts...`` for scratch files binlake writes and then deletes whole; OutsideLakeError when ``base``
    (with ``check_base``) or any existing component below it is a symbolic link."""
    path = Path(base)
    steps = [path] if check_base else []
    for part in parts:
        path = path / part
        steps.append(path)
    for step in steps:
        if step.is_symlink():
            raise OutsideLakeError(
                f"the scratch folder {step} is a symbolic link to {link_target(step)}; {LINK_ADVICE}"
            )
    return path
