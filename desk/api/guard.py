"""Desk's methods that guard the desk: validate, hooks, sync, doctor, migrate."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

from desk.api.base import DeskBase
from desk.errors import UsageError
from desk.layout import INDEX_FILE

if TYPE_CHECKING:
    from pathlib import Path

    from desk.results import Diagnosis, HooksChange, Migrated, Synced, Validation
    from desk.results.guard import AgentSetupDone


class GuardMethods(DeskBase):
    """Guard the desk: validate, hooks, sync, doctor, migrate."""

    def validate(self, mode: str = "staged", *, fix: bool = False) -> Validation:
        """Run the gate over what is staged (`staged`) or every desk file (`all`); `fix` rewrites a
        stale MEMORY.md in the work tree for the person to `git add`."""
        from desk.results.guard import Validation

        if mode == "all":
            from desk.gate.whole import validate_all  # git lists the work tree while the gate loads

            return Validation(mode, validate_all(self))
        from desk.gate.validate import fix_index, validate_staged
        from desk.storage.git import staged_git

        if mode != "staged":
            raise UsageError(f"validate mode must be staged or all, not {mode!r}")
        report, regenerated = validate_staged(self)
        stale = any(f.rule == "index-stale" for f in report.findings)
        if fix and stale and regenerated is not None and fix_index(
                self, regenerated, staged_git(self.root).objects.read_blobs([f":{INDEX_FILE}"]).get(f":{INDEX_FILE}")):
            report.fixed.append(INDEX_FILE)
        return Validation(mode, report)

    def hooks_install(self) -> HooksChange:
        """Install desk's hooks and merge drivers; a foreign hook is kept and runs first."""
        from desk.setup.hooks import install
        from desk.results.guard import HooksChange

        return HooksChange(install(self.root))

    def hooks_uninstall(self) -> HooksChange:
        """Remove desk's hooks and restore the hooks they had replaced."""
        from desk.setup.hooks import uninstall
        from desk.results.guard import HooksChange

        return HooksChange(uninstall(self.root))

    def sync(self, remote: str | None = None, *, push: bool = True,
             progress: Callable[[str], None] | None = None, now: dt.datetime | None = None,
             resume: bool = False, actor: str = "user") -> Synced:
        """Fetch, integrate by merge (never rewriting history), check with the gate, push (never
        forced); with `resume`, finish a person's `git pull` stopped on a conflict (docs/sync.md)."""
        from desk.results.sync import Synced

        if resume:
            from desk.sync.stopped import continue_stopped

            return Synced(continue_stopped(self, now=now))
        from desk.sync.run import sync

        return Synced(sync(self, remote, push=push, progress=progress, now=now, actor=actor))

    def doctor(self, *, repair: bool = False, commits: int = 200, rebuild: bool = False) -> Diagnosis:
        """Check the desk's health (and with `repair`, fix what is safe); `rebuild` first drops every
        derived cache and makes it again."""
        rebuilt = None
        if rebuild:
            from desk.guard.rebuild import rebuild as rebuild_caches

            self.close()  # this object's warm caches are among those dropped
            rebuilt = rebuild_caches(self)
        from desk.guard.checkup import diagnose  # git reads while the doctor's modules load
        from desk.results.guard import Diagnosis

        report = diagnose(self, repair=repair, commits=commits)
        report.rebuilt = rebuilt
        return Diagnosis(report)

    def migrate(self, *, dry_run: bool = False) -> Migrated:
        """Upgrade an older desk's schema in one commit (status `unchanged` when it is current,
        `planned` with `dry_run`). DeskError when the desk is newer than this desk."""
        from desk.setup.migrate import migrate
        from desk.results.working import Migrated

        return Migrated(migrate(self, dry_run=dry_run))

    def setup(self, agent: str, project_dir: str | Path | None = None, *, user_config: bool = False,
              prompt_hook: bool = False, remove: bool = False, dry_run: bool = False,
              project: str | None = None, user: str | None = None) -> AgentSetupDone:
        """Wire this desk into `agent` (claude-code, claude-desktop, cursor): merge its entries into
        the assistant's config files (docs/agents.md, "desk setup")."""
        from pathlib import Path

        from desk.results.guard import AgentSetupDone
        from desk.setup.agents import setup_agent

        return AgentSetupDone(setup_agent(
            agent, self.root, project_dir=Path(project_dir) if project_dir is not None else None,
            user_config=user_config, prompt_hook=prompt_hook, remove=remove, dry_run=dry_run,
            project=project, user=user))
