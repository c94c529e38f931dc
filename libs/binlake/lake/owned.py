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

from binlake.lake.errors import LakeError

LINK_ADVICE = (
    "binlake never deletes or overwrites through a symbolic link: replace the link with a real folder "
    "(or move what it points to inside) and rerun"
)


class OutsideLakeError(LakeError):
    """A path binlake would write or delete is a symbolic link, or leads outside the lake root."""


def _target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def link_problem(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> Optional[str]:
    """Why ``path`` is not provably under ``root`` without links, or None: a component below ``root`` (``path``
    itself included) that is a symbolic link, a path outside ``root``, or one resolving outside it."""
    base, target = Path(os.path.abspath(root)), Path(os.path.abspath(path))
    try:
        rel = target.relative_to(base)
    except ValueError:
        return f"{target} is not inside {base}"
    if ".." in rel.parts:
        return f"{target} leaves {base} ('..')"
    step = base
    for part in rel.parts:
        step = step / part
        if step.is_symlink():
            return f"{step} is a symbolic link to {_target(step)}"
    real_base, real = os.path.realpath(base), os.path.realpath(target)
    if real != real_base and not real.startswith(real_base.rstrip(os.sep) + os.sep):
        return f"{target} resolves to {real}, outside {real_base}"
    return None


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
            raise OutsideLakeError(f"the scratch folder {step} is a symbolic link to {_target(step)}; {LINK_ADVICE}")
    return path
