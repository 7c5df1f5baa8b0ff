"""Results of `desk import` and `desk export`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from desk.results.base import Wrapped, commit_suffix

if TYPE_CHECKING:
    from desk.interchange.exporting import ExportReport
    from desk.interchange.importing import ImportReport


class ImportPlan(Wrapped["ImportReport"]):
    """An import's plan (create / update / unchanged / rejected, proposals, archive records) and,
    unless it was a dry run, what was committed."""

    def text(self) -> str:
        r = self.value
        head = "plan (dry run, nothing written)" if r.dry_run else "import"
        lines = [f"{head}: {r.format} from {r.source}" + (f" into project {r.project}" if r.project else "")]
        lines += [f"  {m.action:<9} {m.path or '-'}  ({m.origin})" + (f": {m.reason}" if m.reason else "")
                  for m in r.memories]
        for f in r.files:
            verb = "write" if f.action == "write" else "unchanged"
            lines.append(f"  {verb:<9} {f.target} <- {', '.join(f.origins)}"
                         + (": the desk's file is still its `desk init` template" if f.action == "write" else ""))
        lines += [f"  proposed  {p.target} <- {p.origin}: {p.note}" for p in r.proposals]
        lines += [f"  skipped   {s}" for s in r.skipped]
        if r.profile is not None:
            changed = ", ".join(r.profile["changed"]) or "nothing changes"
            lines.append(f"  profile   {r.profile['path']} ({r.profile['user_scope']}): {changed}")
        c = r.counts()
        lines.append(f"memories: {c['create']} create, {c['update']} update, {c['unchanged']} unchanged, "
                     f"{c['rejected']} rejected; archive records: {c['records_new']} new, "
                     f"{c['records_present']} already archived"
                     + (f"; desk files: {c['files']} written from the source" if c["files"] else ""))
        if r.status == "imported":
            lines.append(f"imported{commit_suffix(r.commit)}" if r.commit else "imported (no memory changed)")
        if r.records_new and not r.dry_run:
            lines.append(f"{r.records_new} records appended to the archive; `desk checkpoint` commits them")
        elif r.status == "unchanged":
            lines.append("unchanged: nothing new to import (no commit)")
        return "\n".join(lines)

    def warnings(self) -> list[str]:
        """What the source held and the import left out (a symlink, a repeated field), on stderr
        too, so a person who reads only the summary line learns it."""
        return [f"desk: warning: skipped {s}" for s in self.value.skipped]


class Exported(Wrapped["ExportReport"]):
    """The files an export wrote (and those it found already up to date)."""

    def text(self) -> str:
        r = self.value
        lines = [f"skipped: {s}" for s in r.skipped]
        lines.append(f"exported {r.memories} memories as {r.format} to {r.dest}: {len(r.written)} file(s) "
                     f"written, {len(r.unchanged)} unchanged")
        return "\n".join(lines)
