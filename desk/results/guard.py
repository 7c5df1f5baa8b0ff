"""Results of the guard verbs: validate, hooks install/uninstall, doctor, setup."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desk.results.base import Outcome, Wrapped, counted

if TYPE_CHECKING:
    from desk.guard.doctor import DoctorReport
    from desk.setup.agents import AgentSetup
    from desk.setup.hooks import HooksResult
    from desk.gate.checks import Report


@dataclass(frozen=True)
class Validation(Outcome):
    """The findings of `validate` (mode `staged` or `all`); exit 3 when any is an error."""

    mode: str
    report: Report

    @property
    def exit_code(self) -> int:
        return 0 if self.report.ok else 3

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, **self.report.to_json()}

    def text(self) -> str:
        report = self.report
        lines = [str(f) + ("" if f.severity == "error" else " (warning)") for f in report.findings]
        errors = len(report.errors)
        lines.append(f"{'ok' if not errors else 'rejected'}: {counted(report.checked, 'file')} checked, "
                     f"{counted(errors, 'error')}, {counted(len(report.findings) - errors, 'warning')}")
        if report.fixed:
            from desk.guard.hooks import STALE_INDEX_MESSAGE

            lines.append(STALE_INDEX_MESSAGE)
        return "\n".join(lines)


class HooksChange(Wrapped["HooksResult"]):
    """What `hooks_install` / `hooks_uninstall` did to each hook."""

    def text(self) -> str:
        return "\n".join([*(f"{h}: {a}" for h, a in self.value.actions.items()),
                          *(f"merge driver {d}: {a}" if d.startswith("desk-") else f"{d}: {a}"
                            for d, a in self.value.merge_drivers.items())])


class Diagnosis(Wrapped["DoctorReport"]):
    """doctor's problems, each found, repaired or needing a person; exit 3 when one remains."""

    @property
    def exit_code(self) -> int:
        return 0 if self.value.ok else 3

    def text(self) -> str:
        return self.value.text()


class AgentSetupDone(Wrapped["AgentSetup"]):
    """What `desk setup AGENT` did to each config file; the import it offers."""

    def text(self) -> str:
        setup = self.value
        would = "would be " if setup.dry_run else ""
        lines = [*(f.diff.rstrip("\n") for f in setup.files if setup.dry_run and f.diff),
                 *(f"{f.path}: {would if f.status != 'unchanged' else ''}{f.status}" for f in setup.files)]
        if all(f.status == "unchanged" for f in setup.files):
            lines.append("nothing to change: " + ("desk's entries are not there" if setup.removed
                                                 else "desk is set up already"))
        if setup.import_command:
            lines.append(f"Claude Code keeps memories for this project in {setup.memory_folder}; import them "
                         f"with --import, or: {shlex.join(setup.import_command)}")
        return "\n".join(lines)
