"""Results of `desk sync` and `desk clone`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desk.results.base import Outcome, Wrapped, counted

if TYPE_CHECKING:
    from desk.guard.doctor import DoctorReport
    from desk.sync.run import SyncResult


class Synced(Wrapped["SyncResult"]):
    """What one sync did: commits fetched and pushed, files merged and regenerated, cases opened."""

    def warnings(self) -> list[str]:
        return list(self.value.warnings)

    def text(self) -> str:
        v = self.value
        where = f"{v.remote}/{v.branch}"
        lines = [{"up-to-date": f"up to date with {where}",
                  "pushed-only": f"nothing new from {where}",
                  "fast-forward": f"fast-forwarded to {where} ({counted(v.fetched, 'new commit')})",
                  "merged": f"merged {where} ({counted(v.fetched, 'new commit')})",
                  "merge-finished": f"finished the stopped git merge on {v.branch} "
                                    f"(commit {v.commits[0][:12] if v.commits else '-'})",
                  "rebase-finished": f"finished the stopped git rebase on {v.branch}",
                  "sync-undone": f"undid a desk sync killed while git merged on {v.branch} (files put "
                                 "back as HEAD has them); run `desk sync` to sync again"}[v.status]]
        if v.merged:
            lines.append(f"files changed here: {len(v.merged)}")
        if v.regenerated:
            lines.append("regenerated: " + ", ".join(v.regenerated))
        for case in v.cases:
            what = v.clashes.get(case, "a memory changed differently on both sides")
            lines.append(f"conflict case opened: {case} ({what}; `desk conflicts` lists it)")
        if v.secrets:
            commits = counted(len({s["commit"] for s in v.secrets}), "commit")
            lines.append(f"secrets added by incoming commits: {len(v.secrets)} in {commits} (named above): "
                         "rotate those keys")
        if v.pushed:
            lines.append(f"pushed {counted(v.pushed, 'commit')} to {where}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Cloned(Outcome):
    """A new clone: where, what was set up, and doctor's first look."""

    path: Path
    setup: list[str]
    doctor: DoctorReport

    def to_json(self) -> dict[str, Any]:
        return {"status": "cloned", "path": str(self.path), "setup": self.setup,
                "doctor": self.doctor.to_json()}

    def text(self) -> str:
        return "\n".join([f"cloned a desk into {self.path}", *self.setup, self.doctor.text()])
