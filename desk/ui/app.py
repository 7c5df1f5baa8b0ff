"""`desk ui`'s pages: Starlette, server-rendered Jinja2 and plain forms over the public API.

Every request carries the token the URL was printed with (then an HttpOnly SameSite=Strict
cookie); another Host (DNS rebinding) or Origin is refused, POSTs carry the CSRF token, and the
CSP loads nothing from elsewhere. Writes are committed with `Desk-Client: ui`.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import hmac
import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

import desk

HERE = Path(__file__).parent
COOKIE = "desk_ui"
HEADERS = {"Content-Security-Policy": "default-src 'self'; form-action 'self'; frame-ancestors 'none'",
           "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "Cache-Control": "no-store"}
PAGE_LIMIT = 200  # memories and revisions a page lists before it says how many it left out
SEARCH_LIMIT = 10  # recall's most hits for one query


ENV = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))


def warm_up(d: desk.Desk) -> None:
    """Compile the templates and build the caches the memory list reads before the URL is printed."""
    for name in ENV.list_templates(extensions=["html"]):
        ENV.get_template(name)
    d.list()


def build_app(d: desk.Desk, *, token: str, csrf: str, port: int) -> Starlette:
    """The app for desk `d` on 127.0.0.1:`port`, requiring `token`; forms carry `csrf`."""
    writer = d.with_trailers({"Desk-Client": "ui"})
    origins = {f"http://{host}:{port}" for host in ("127.0.0.1", "localhost")}

    def page(template: str, status: int = 200, **values: Any) -> Response:
        html = ENV.get_template(template).render(csrf=csrf, **values)
        return Response(html, status, media_type="text/html; charset=utf-8")

    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        origin = request.headers.get("origin")
        if request.headers.get("host") not in {o.removeprefix("http://") for o in origins}:
            return PlainTextResponse("forbidden: not this server's host", 403, headers=HEADERS)
        if origin is not None and origin not in origins:
            return PlainTextResponse("forbidden: a request from another origin", 403, headers=HEADERS)
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            return PlainTextResponse("forbidden: open the URL `desk ui` printed (it carries the token)",
                                     403, headers=HEADERS)
        if request.method not in ("GET", "HEAD"):
            sent = parse_qs((await request.body()).decode("utf-8", "replace")).get("csrf", [""])[0]
            if not hmac.compare_digest(sent.encode(), csrf.encode()):
                return PlainTextResponse("forbidden: the form's CSRF token is missing or wrong", 403, headers=HEADERS)
        if "token" in request.query_params:  # into the cookie, out of the address bar and history
            rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            where = "/" + request.url.path.lstrip("/")  # never `//host`: a redirect to elsewhere
            response: Response = RedirectResponse(where + ("?" + rest if rest else ""), 303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        else:
            response = await call_next(request)
        response.headers.update(HEADERS)
        return response

    async def not_found(request: Request, exc: Exception) -> Response:
        """No such memory, event, case or proposal (or one gone while its form was open)."""
        return page("error.html", 404, error=exc)

    def endpoint(render: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            return render(request)
        return run

    async def memories(request: Request) -> Response:
        q = request.query_params
        project, kind, trigger, query = ((q.get(k) or "").strip() or None for k in ("project", "type", "trigger", "q"))
        listed = d.list(type=kind, project=project)
        entries = [e for e in listed.entries if trigger is None or trigger in e.triggers]
        hits = None
        if query:
            try:
                found = d.recall(query, kind="memory", limit=SEARCH_LIMIT, project=project).to_json()["hits"]
            except desk.DeskError as exc:
                return page("error.html", 400, error=exc)
            rank = {h["id"].partition(":")[2]: h for h in found}
            entries = sorted((e for e in entries if e.name in rank), key=lambda e: rank[e.name]["rank"])
            hits = {name: h["snippet"] for name, h in rank.items()}
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        user = q.get("user") or None
        prefs = d.pref_list(user=user).to_json() if user else None
        return page("memories.html", entries=entries[:PAGE_LIMIT], left=max(0, len(entries) - PAGE_LIMIT),
                    hits=hits, now=now, q=q, projects=d.project_names(), invalid=listed.invalid,
                    types=sorted({e.type for e in listed.entries}), prefs=prefs)

    def memory_page(request: Request, status: int = 200, **values: Any) -> Response:
        name, project = request.path_params["name"], request.query_params.get("project") or None
        shown = d.show(name, project=project)
        text = (d.root / shown.path).read_text("utf-8") if (d.root / shown.path).exists() else ""
        try:
            revisions = desk.memory_revisions(d, name, project=project, limit=PAGE_LIMIT).revisions
        except desk.DeskError:  # a file no commit has held yet (written by hand)
            revisions = []
        return page("memory.html", status, name=name, project=project, shown=shown.to_json(), revisions=revisions,
                    base_commit=revisions[0].commit.sha if revisions else "HEAD",
                    **{"text": text, "base": _digest(text), **values})

    async def edit(request: Request) -> Response:
        form = await request.form()
        name, text = request.path_params["name"], str(form.get("text", "")).replace("\r\n", "\n")
        project = request.query_params.get("project") or None
        try:
            on_disk = d.root / d.show(name, project=project).path
            now = on_disk.read_text("utf-8") if on_disk.exists() else ""
            if _digest(now) != form.get("base"):  # changed since the form was drawn: never overwrite it
                try:  # (diff reads desk-wide memories; a project's shows the texts' difference)
                    changed = "" if project else d.diff(name, str(form.get("base_commit") or "HEAD")).diff
                except desk.DeskError:  # a base commit that is not one: show the texts' difference
                    changed = ""
                return memory_page(request, 409, text=text, stale=changed or _udiff(text, now), base=_digest(now))
            done = writer.remember_file(name, text, actor="user", project=project).to_json()
        except desk.DeskError as exc:  # the gate's findings, or a file with a person's uncommitted edits
            findings = [f.to_json() for f in getattr(exc, "findings", [])]
            return memory_page(request, 409 if isinstance(exc, desk.ConflictError) else 422,
                               text=text, error=exc, findings=findings)
        return memory_page(request, saved=done)

    async def event(request: Request) -> Response:
        return page("event.html", event=d.archive_show(request.path_params["event_id"]).to_json())

    async def context(request: Request) -> Response:
        q = request.query_params
        budget = int(q["budget"]) if q.get("budget", "").isdigit() else None
        try:
            shown = d.context(query=q.get("q") or None, budget=budget).to_json()
        except desk.DeskError as exc:
            return page("error.html", 400, error=exc)
        return page("context.html", context=shown, q=q)

    async def timeline(request: Request) -> Response:
        events = d.archive_list(limit=PAGE_LIMIT).to_json()["events"]
        days: dict[str, dict[str, Any]] = {}
        for day, group in itertools.groupby(sorted(events, key=lambda e: e["at"], reverse=True), lambda e: e["at"][:10]):
            days[day] = {"events": list(group), "journal": None}
        for path in sorted((d.root / "journal").glob("*.md"), reverse=True)[:60]:
            days.setdefault(path.stem, {"events": []})["journal"] = path.read_text("utf-8", "replace")
        return page("timeline.html", days=sorted(days.items(), reverse=True), health=d.doctor().to_json())

    async def cases(request: Request) -> Response:
        return page("cases.html", cases=d.conflicts_list(include_closed=True).to_json()["cases"])

    def case_page(request: Request, status: int = 200, **values: Any) -> Response:
        case = d.conflicts_show(request.path_params["case"]).to_json()["case"]
        diff = "".join(pair["diff"] for pair in case.get("diffs", []))
        return page("case.html", status, case=case, diff=diff, event_id=f"ui:{case['id']}:r{case['revision']}", **values)

    async def resolve(request: Request) -> Response:
        form = await request.form()
        field = {k: str(form.get(k, "")).strip() for k in ("candidate", "revision", "actor", "rationale", "event_id")}
        try:
            done = writer.resolve(request.path_params["case"], field["candidate"],
                                  expected_revision=int(field["revision"] or 0), event_id=field["event_id"],
                                  actor=field["actor"], rationale=field["rationale"]).to_json()
        except (desk.DeskError, ValueError) as exc:
            return case_page(request, 409 if isinstance(exc, desk.ConflictError) else 422, error=exc, form=field)
        return case_page(request, resolved=done)

    async def proposals(request: Request) -> Response:
        return page("proposals.html", proposals=d.proposals().proposals)

    def proposal_page(request: Request, status: int = 200, **values: Any) -> Response:
        shown = d.proposal(request.path_params["proposal"]).value
        written = {path: text for path, text in shown.files.items() if text is not None}
        values.setdefault("text", next(iter(written.values())) if len(written) == 1 else None)
        return page("proposal.html", status, shown=shown, p=shown.proposal, **values)

    async def verdict(request: Request) -> Response:
        """Accept (with `text`: edit then accept) or reject (with `reason`) one proposal, as the person."""
        form, proposal_id = await request.form(), request.path_params["proposal"]
        if request.path_params["verdict"] not in ("accept", "reject"):
            return PlainTextResponse("not found", 404)
        edited = str(form["text"]).replace("\r\n", "\n") if "text" in form else None
        reason = str(form.get("reason", "")).strip()
        try:
            if request.path_params["verdict"] == "reject":
                done = writer.reject(proposal_id, reason=reason, actor="user")
            elif edited is not None and not edited.strip():
                raise desk.UsageError("the edited text is empty; nothing was changed")
            else:
                done = writer.accept(proposal_id, actor="user", text=edited)
        except desk.DeskError as exc:  # stale (exit 4), the gate's findings (exit 3), no reason (exit 2)
            findings = [f.to_json() for f in getattr(exc, "findings", [])]
            return proposal_page(request, 409 if isinstance(exc, desk.ConflictError) else 422, error=exc,
                                 findings=findings, reason=reason, **({} if edited is None else {"text": edited}))
        return page("proposals.html", proposals=d.proposals().proposals, done=done.value)

    return Starlette(routes=[
        Route("/", memories), Route("/memory/{name}", endpoint(memory_page)), Route("/memory/{name}", edit, methods=["POST"]),
        Route("/event/{event_id}", event), Route("/context", context), Route("/timeline", timeline),
        Route("/proposals", proposals), Route("/proposals/{proposal}", endpoint(proposal_page)),
        Route("/proposals/{proposal}/{verdict}", verdict, methods=["POST"]),
        Route("/cases", cases), Route("/cases/{case}", endpoint(case_page)), Route("/cases/{case}", resolve, methods=["POST"]),
        Route("/style.css", lambda _: FileResponse(HERE / "templates" / "style.css", media_type="text/css")),
    ], middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)], exception_handlers={desk.DeskError: not_found})


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _udiff(old: str, new: str) -> str:
    before, after = ((t if t.endswith("\n") else t + "\n").splitlines(True) for t in (old, new))
    return "".join(difflib.unified_diff(before, after, "your form", "now"))
