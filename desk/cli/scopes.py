"""Commands for user scopes: `desk user` (the profile) and `desk pref` (preferences by key)."""

from __future__ import annotations

import click

from desk.cli.output import actor_option, invocation, json_option, render, user_option


@click.group("user")
def user_group() -> None:
    """The profile of the desk owner or of the user named by --user: show, set, unset.

    The profile is USER.md's frontmatter (another user's lives in users/<scope-id>/USER.md). Its
    fields are fixed: name, call_them, pronouns, timezone (an IANA name or a UTC offset such as
    UTC+8), language, languages (comma-separated), location, role, display_name.
    """


@user_group.command("show")
@user_option
@json_option
def user_show_command() -> None:
    """Print the profile fields."""
    render(invocation().desk().user_show(user=invocation().user))


@user_group.command("set")
@click.argument("assignments", nargs=-1, required=True, metavar="FIELD=VALUE...")
@actor_option
@user_option
@json_option
def user_set_command(assignments: tuple[str, ...], actor: str) -> None:
    """Set the named profile fields; the others stay as they are (one commit, none when the same).

    Exit 2 for an unknown field or an invalid value, with nothing changed.
    """
    from desk.errors import UsageError

    fields: dict[str, object] = {}
    for pair in assignments:
        name, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"{pair!r}: give FIELD=VALUE", hint="see `desk user --help` for the fields")
        fields[name.strip()] = ([v.strip() for v in value.split(",") if v.strip()]
                                if name.strip() == "languages" else value)
    render(invocation().desk().user_set(fields, user=invocation().user, actor=actor))


@user_group.command("unset")
@click.argument("fields", nargs=-1, required=True, metavar="FIELD...")
@actor_option
@user_option
@json_option
def user_unset_command(fields: tuple[str, ...], actor: str) -> None:
    """Remove the named profile fields (one commit, none when none was set)."""
    render(invocation().desk().user_unset(list(fields), user=invocation().user, actor=actor))


@click.group("pref")
def pref_group() -> None:
    """Preferences by stable key for the desk owner or the user named by --user.

    One file a preference (prefs/<key>.md in the scope's folder), one commit per change with a
    `Desk-Op: pref` trailer; PREFERENCES.md lists the active ones. Keys are lowercase words joined
    by '.', '_' or '-', e.g. response.language.
    """


@pref_group.command("set")
@click.argument("key")
@click.argument("value")
@click.option("--expires", metavar="TIME", help="When it stops applying (ISO 8601 with a zone); "
              "expired preferences are kept but never injected.")
@click.option("--source", metavar="S", help="Where it came from (default: user).")
@click.option("--source-event", metavar="ID",
              help="The archive event it came from (attached by the harness, never by a model).")
@click.option("--at", metavar="TIME", help="When the change happened (default: now); a change not "
              "later than the stored one is refused as stale (exit 4).")
@actor_option
@user_option
@json_option
def pref_set_command(key: str, value: str, expires: str | None, source: str | None,
                     source_event: str | None, at: str | None, actor: str) -> None:
    """Create or update the preference KEY: created, unchanged (no commit) or updated.

    The same value, source, expiry and source event again is `unchanged` with no commit, whatever
    --at says; anything else is a new revision, in one commit.
    """
    render(invocation().desk().pref_set(key, value, user=invocation().user, expires=expires,
                                        source=source, source_event=source_event, at=at, actor=actor))


@pref_group.command("get")
@click.argument("key")
@click.option("--as-of", metavar="TIME", help="Say whether it is active at this time (default: now).")
@user_option
@json_option
def pref_get_command(key: str, as_of: str | None) -> None:
    """Print the preference KEY (an expired one too, marked as such)."""
    render(invocation().desk().pref_get(key, user=invocation().user, as_of=as_of))


@pref_group.command("list")
@click.option("--all", "all_", is_flag=True, help="Expired preferences too.")
@click.option("--as-of", metavar="TIME", help="List what is active at this time (a pure read).")
@user_option
@json_option
def pref_list_command(all_: bool, as_of: str | None) -> None:
    """List the active preferences (with --all, the expired ones too)."""
    render(invocation().desk().pref_list(user=invocation().user, all=all_, as_of=as_of))


@pref_group.command("delete")
@click.argument("key")
@actor_option
@user_option
@json_option
def pref_delete_command(key: str, actor: str) -> None:
    """Delete the preference KEY (the exact key only), in one commit."""
    render(invocation().desk().pref_delete(key, user=invocation().user, actor=actor))


@pref_group.command("history")
@click.argument("key")
@user_option
@json_option
def pref_history_command(key: str) -> None:
    """Every commit that changed the preference KEY, newest first."""
    render(invocation().desk().pref_history(key, user=invocation().user))


COMMANDS = [user_group, pref_group]
