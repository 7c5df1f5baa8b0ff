"""`desk doctor`'s entry, `diagnose`: the desk lock taken and git's reads started before the
doctor's modules load (desk.gate.whole.EarlyReads); desk.guard.doctor does the checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from desk.gate.whole import EarlyReads

if TYPE_CHECKING:
    from desk.guard.doctor import DoctorReport
    from desk.layout import DeskFolder


def diagnose(desk: DeskFolder, *, repair: bool = False, commits: int = 200) -> DoctorReport:
    """`desk doctor` (desk.guard.doctor.diagnose says what it checks). Without `repair`, the desk
    lock is taken here and git starts listing the work tree, naming the last commits and reading
    the hooks' config before the doctor's modules load; `--repair` may change the desk first, so
    there git reads after the repairs."""
    if repair:
        from desk.guard.doctor import diagnose as run

        return run(desk, repair=True, commits=commits)
    early = EarlyReads(desk, commits)
    from desk.guard.doctor import diagnose as run

    return run(desk, commits=commits, early=early)
