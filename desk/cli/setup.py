"""`desk setup claude-code | claude-desktop | cursor`: wire desk into an assistant's config files."""

from __future__ import annotations

from pathlib import Path

import click

from desk.cli.output import F, invocation, json_option, print_json, project_option, render, user_option


@click.group("setup")
def setup_group() -> None:
    """Wire desk into Claude Code, Claude Desktop or Cursor: the MCP server entry and Claude Code's
    hooks, merged into their config files.

    The server entry runs `desk serve` on this desk; Claude Code's hooks load and archive each
    session (docs/agents.md, "desk setup"). The entries are merged into the assistant's own JSON config; every other entry is kept. A
    second run changes nothing; --remove takes out exactly desk's entries; --dry-run prints the
    diff and writes nothing. --desk, --project and --user are passed to every desk command
    written. HOME (and XDG_CONFIG_HOME or APPDATA for Claude Desktop) say where user-level
    files are.
    """


def _options(func: F) -> F:
    for option in reversed([
            click.option("--remove", is_flag=True, help="Take desk's entries out again (foreign ones stay)."),
            click.option("--dry-run", is_flag=True, help="Print the diff of each file; write nothing."),
            user_option, project_option, json_option]):
        func = option(func)
    return func


def _setup(agent: str, project_dir: Path | None = None, **options: bool) -> None:
    scope = invocation()
    render(scope.desk().setup(agent, project_dir, project=scope.project, user=scope.user, **options))


@setup_group.command("claude-code")
@click.argument("project_dir", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--user-config", is_flag=True,
              help="Write ~/.claude.json and ~/.claude/settings.json (every project) instead of the "
                   "project's .mcp.json and .claude/settings.json.")
@click.option("--prompt-hook", is_flag=True,
              help="Also a UserPromptSubmit hook that injects the memories each prompt triggers.")
@click.option("--import", "run_import", is_flag=True,
              help="Also import the project's Claude Code auto memory into the desk (`desk import claude-code`).")
@_options
def claude_code_command(project_dir: Path | None, user_config: bool, prompt_hook: bool, run_import: bool,
                        remove: bool, dry_run: bool) -> None:
    """Merge the `desk` MCP server into PROJECT_DIR/.mcp.json (default: the current folder) and
    the hooks into PROJECT_DIR/.claude/settings.json: SessionStart runs `desk context`, PreCompact
    and SessionEnd archive the transcript (nothing is lost to compaction), and with --prompt-hook
    UserPromptSubmit adds the memories a prompt triggers. Offers to import the project's existing
    Claude Code memory."""
    scope = invocation()
    desk = scope.desk()
    done = desk.setup("claude-code", project_dir, user_config=user_config, prompt_hook=prompt_hook, remove=remove,
                      dry_run=dry_run, project=scope.project, user=scope.user)
    folder = done.value.memory_folder
    if not (run_import and folder and not dry_run):
        render(done)
        return
    imported = desk.import_("claude-code", folder, project=scope.project)
    if scope.json:
        print_json({**done.to_json(), "imported": imported.to_json()})
        return
    render(done)
    render(imported)


@setup_group.command("claude-desktop")
@_options
def claude_desktop_command(remove: bool, dry_run: bool) -> None:
    """Merge the `desk` MCP server into Claude Desktop's claude_desktop_config.json (macOS:
    ~/Library/Application Support/Claude, Windows: %APPDATA%\\Claude, else $XDG_CONFIG_HOME/Claude)."""
    _setup("claude-desktop", remove=remove, dry_run=dry_run)


@setup_group.command("cursor")
@click.argument("project_dir", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--user-config", is_flag=True, help="Write ~/.cursor/mcp.json (every project) instead.")
@_options
def cursor_command(project_dir: Path | None, user_config: bool, remove: bool, dry_run: bool) -> None:
    """Merge the `desk` MCP server into PROJECT_DIR/.cursor/mcp.json (default: the current folder)."""
    _setup("cursor", project_dir, user_config=user_config, remove=remove, dry_run=dry_run)


COMMANDS = [setup_group]
