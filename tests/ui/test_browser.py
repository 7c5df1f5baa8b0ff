"""`desk ui` in a real browser: Debian's headless chromium driven by Selenium through
chromium-driver, against `desk ui --no-open` started as a person starts it. Each write leaves
exactly one commit; refusals leave none. The screenshots in docs/ui.md are made here: set
DESK_UI_SCREENSHOTS=docs/ui to write them there (else they go to a temporary folder).

Skipped, saying why, where chromium, chromium-driver or Selenium is missing; .ci/run installs them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import desk
from tests.ui.conftest import commits_since, head
from tests.ui.test_proposals import propose, review_on

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="needs Debian's chromium and chromium-driver (apt-get install -y "
                                       "chromium chromium-driver; .ci/run does)")
pytest.importorskip("jinja2", reason="desk ui needs the ui extra: pip install 'desk[ui]'")
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the test extra)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.expected_conditions import staleness_of  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402


@pytest.fixture
def server(ui_desk: desk.Desk) -> Iterator[str]:
    """`desk ui --no-open` on a free port; yields the URL it printed (with its token)."""
    proc = subprocess.Popen([sys.executable, "-m", "desk", "--desk", str(ui_desk.root), "ui", "--no-open"],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
        assert found, line
        yield found.group(0)
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=900,640"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=DRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("DESK_UI_SCREENSHOTS") or tmp_path / "shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def set_text(driver: Any, name: str, text: str) -> None:
    box = driver.find_element(By.NAME, name)
    box.clear()
    box.send_keys(text)


def go(driver: Any, act: Callable[[], object]) -> None:
    """Do `act` (a click, a key, a submit) and wait until the page it leads to has loaded."""
    old = driver.find_element(By.TAG_NAME, "html")
    act()
    WebDriverWait(driver, 20).until(staleness_of(old))
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")


def test_a_person_reviews_edits_resolves_and_accepts(server: str, browser: Any, ui_desk: desk.Desk,
                                             tmp_path: Path) -> None:
    b, out = browser, shots(tmp_path)
    b.get(server)
    assert b.find_element(By.TAG_NAME, "h1").text == "Memories"
    assert "token=" not in b.current_url
    b.save_screenshot(str(out / "memories.png"))

    go(b, lambda: b.switch_to.active_element.send_keys("report language" + Keys.ENTER))  # by keyboard alone
    rows = b.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.text.split()[0] for r in rows] == ["report-style"]

    go(b, b.find_element(By.LINK_TEXT, "report-style").click)
    b.save_screenshot(str(out / "memory.png"))
    older = b.find_elements(By.CSS_SELECTOR, ".history details")[1]
    assert not older.find_element(By.CSS_SELECTOR, "pre").is_displayed()
    older.find_element(By.TAG_NAME, "summary").click()  # one click shows the diff
    assert "+Reports in Chinese." in older.find_element(By.CSS_SELECTOR, "pre").text  # the first revision
    b.execute_script("document.querySelector('.history').scrollIntoView()")
    b.save_screenshot(str(out / "history.png"))

    before = head(ui_desk)
    text = (ui_desk.root / "memory" / "report-style.md").read_text("utf-8")
    set_text(b, "text", text.replace("type: preference", "type: bogus"))
    go(b, b.find_element(By.CSS_SELECTOR, "form[method=post] button").click)
    alert = b.find_element(By.CSS_SELECTOR, "[role=alert]")
    assert "line 4" in alert.text and "bogus" in alert.text
    assert head(ui_desk) == before
    b.save_screenshot(str(out / "edit-error.png"))
    set_text(b, "text", text.replace("English", "French"))
    go(b, b.find_element(By.CSS_SELECTOR, "form[method=post] button").click)
    assert "Saved: updated" in b.find_element(By.CSS_SELECTOR, "[role=status]").text
    [edit] = commits_since(ui_desk, before)
    assert edit["trailers"]["Desk-Client"] == ["ui"]

    go(b, b.find_element(By.LINK_TEXT, "Context").click)
    set_text(b, "q", "deploy")
    go(b, b.find_element(By.NAME, "q").submit)
    assert b.find_elements(By.TAG_NAME, "meter")
    b.save_screenshot(str(out / "context.png"))
    go(b, b.find_element(By.LINK_TEXT, "Timeline").click)
    assert "Health" in b.page_source
    b.save_screenshot(str(out / "timeline.png"))

    go(b, b.find_element(By.LINK_TEXT, "Conflict cases").click)
    go(b, b.find_element(By.PARTIAL_LINK_TEXT, "case-").click)
    b.find_elements(By.NAME, "candidate")[1].click()
    set_text(b, "actor", "ada@example.org")
    set_text(b, "rationale", "3.12 is what CI runs")
    b.save_screenshot(str(out / "case.png"))
    go(b, b.find_element(By.CSS_SELECTOR, "fieldset button").click)
    assert "Resolved: resolved" in b.find_element(By.CSS_SELECTOR, "[role=status]").text
    [resolved] = commits_since(ui_desk, str(edit["commit"]))
    assert resolved["trailers"]["Desk-Client"] == ["ui"]

    proposal = propose(review_on(ui_desk))  # review mode on, then the assistant writes: a proposal
    before = head(ui_desk)
    go(b, b.find_element(By.LINK_TEXT, "Proposals").click)
    go(b, b.find_element(By.PARTIAL_LINK_TEXT, proposal).click)
    assert "+The user works in Europe/Paris time." in b.find_element(By.CSS_SELECTOR, "pre.diff").text
    b.save_screenshot(str(out / "proposals.png"))
    go(b, b.find_element(By.XPATH, "//button[text()='Accept as proposed']").click)
    assert "accepted" in b.find_element(By.CSS_SELECTOR, "[role=status]").text
    [accepted] = commits_since(ui_desk, before)
    assert accepted["trailers"]["Desk-Client"] == ["ui"] and accepted["trailers"]["Desk-Reviewed-By"] == ["user"]

    b.set_window_size(360, 740)
    go(b, b.find_element(By.LINK_TEXT, "Memories").click)
    width = b.execute_script("return document.documentElement.scrollWidth")
    assert width <= 360, width  # readable at 360 px: nothing wider than the screen
    b.save_screenshot(str(out / "memories-360.png"))


def status(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers or {})) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_running_server_refuses_and_changes_nothing(server: str, ui_desk: desk.Desk) -> None:
    base, token = server.split("/?token=")
    cookie = {"Cookie": f"desk_ui={token}"}
    before = head(ui_desk)
    text = (ui_desk.root / "memory" / "deploy.md").read_text("utf-8")
    form = urllib.parse.urlencode({"text": text.replace("main", "trunk"), "base": "x"}).encode()
    assert status(base + "/") == 403  # no token
    assert status(base + "/memory/deploy", data=form, headers=cookie) == 403  # no CSRF token
    assert status(base + "/memory/deploy", data=form + b"&csrf=guess", headers=cookie) == 403
    assert status(base + "/memory/deploy", data=form, headers={**cookie, "Origin": "http://evil.example"}) == 403
    assert status(base + "/memory/deploy?" + form.decode(), headers=cookie) == 200  # a GET: shows, never writes
    assert head(ui_desk) == before and (ui_desk.root / "memory" / "deploy.md").read_text("utf-8") == text
