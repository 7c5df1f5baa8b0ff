"""A deterministic retrieval corpus: many English and Chinese conversation sessions with questions
whose evidence turns are known.

Each session is a short chat about one project. A few turns state a fact (the evidence: a decision,
an owner, a port, a date, a budget, a preference); the others are distractors built from the same
vocabulary: the same project with another role, another project with the same role, a fact that
was considered and rejected, small talk full of question words. A question restates one fact in
other words, sharing a word or two with it as people do ("What was the final call on the database
for Orion?"), so a ranker has to weigh the rare, informative terms (project, role, the verb) over
the common ones ("what", "the", "for") and over distractors that share the entity names.

Everything comes from `random.Random(seed)`: the same seed gives the same corpus, byte for byte.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

EN = {
    "projects": ["Orion", "Maple", "Kestrel", "Juniper", "Atlas", "Nimbus", "Cobalt", "Quartz", "Falcon",
                 "Harbor", "Lumen", "Sable", "Tundra", "Vesper", "Willow", "Zephyr", "Beacon", "Cedar",
                 "Delta", "Ember", "Granite", "Helix", "Iris", "Jasper", "Krypton", "Lotus", "Meridian"],
    "people": ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jonas",
               "Keiko", "Liam", "Mara", "Nadia", "Omar", "Priya", "Rosa", "Sven", "Tariq", "Uma"],
    "roles": {"database": ["SQLite", "Postgres", "MySQL", "DuckDB", "MongoDB", "Redis"],
              "queue": ["Kafka", "RabbitMQ", "NATS", "SQS", "Pulsar"],
              "frontend framework": ["React", "Vue", "Svelte", "Angular", "Solid"],
              "cloud provider": ["AWS", "GCP", "Azure", "Hetzner", "Fly"],
              "test runner": ["pytest", "Jest", "Vitest", "Mocha", "unittest"],
              "logging stack": ["Loki", "Elastic", "Datadog", "Graylog", "Splunk"]},
    "areas": ["billing", "onboarding", "search", "payments", "analytics", "security", "mobile"],
    "envs": ["staging", "production", "demo", "canary"],
    "months": ["March", "April", "May", "June", "July", "August", "September", "October"],
    "reasons": ["the audit", "a vendor delay", "the holiday freeze", "missing translations",
                "a failed load test"],
    "formats": ["PDF", "bullet point", "one page", "slide deck", "spreadsheet"],
    "weekdays": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "small_talk": ["What do you think we should do next?", "Did we cover everything for today?",
                   "Which of these is more urgent for us?", "Thanks, that works for me.",
                   "Can you summarize what we have so far?", "Who else should join the next call?",
                   "How long will that take, roughly?", "Let me check and get back to you.",
                   "Is there anything blocking us right now?", "Good point, we did discuss that."],
}

ZH = {
    "projects": ["星河", "青松", "远航", "晨曦", "磐石", "云帆", "北斗", "海棠", "银杏", "赤霄", "白鹭",
                 "紫薇", "玄武", "朱雀", "麒麟", "凤凰", "长城", "黄河", "昆仑", "天山"],
    "people": ["王伟", "李娜", "张敏", "刘洋", "陈静", "杨帆", "赵磊", "黄丽", "周杰", "吴婷", "徐明",
               "孙悦", "马超", "朱琳", "胡斌", "郭佳"],
    "roles": {"数据库": ["SQLite", "Postgres", "MySQL", "达梦", "TiDB"],
              "消息队列": ["Kafka", "RocketMQ", "RabbitMQ", "Pulsar"],
              "前端框架": ["React", "Vue", "Svelte", "Angular"],
              "云服务商": ["阿里云", "腾讯云", "华为云", "AWS"],
              "缓存方案": ["Redis", "Memcached", "本地内存", "Tair"]},
    "areas": ["计费", "注册流程", "搜索", "支付", "数据分析", "安全审计", "移动端"],
    "envs": ["测试环境", "生产环境", "演示环境", "灰度环境"],
    "months": ["三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月"],
    "reasons": ["合规审计", "供应商延期", "节假日封网", "翻译没有完成", "压测没有通过"],
    "formats": ["PDF", "要点列表", "一页纸", "幻灯片", "表格"],
    "weekdays": ["周一", "周二", "周三", "周四", "周五"],
    "small_talk": ["你觉得我们下一步应该做什么？", "今天的事情都聊完了吗？", "这几件事哪个更急？",
                   "好的，我这边没问题。", "能帮我总结一下目前的进展吗？", "下次会议还需要谁参加？",
                   "这个大概需要多长时间？", "我确认一下再回复你。", "现在有什么阻碍我们的吗？",
                   "说得对，我们之前讨论过这个。"],
}


@dataclass(frozen=True)
class Turn:
    session: str
    kind: str  # inbound | outbound
    at: dt.datetime
    content: str


@dataclass(frozen=True)
class Question:
    text: str
    lang: str
    evidence: int  # index of the evidence turn in the corpus


def _fact(rng: random.Random, v: dict, lang: str, project: str) -> tuple[str, str, list[str], tuple[str, ...], list[tuple[str, ...]]]:
    """(evidence, question, distractors, fact key, keys of facts a distractor also states)."""
    kind = rng.randrange(6)
    others = [p for p in v["projects"] if p != project]
    other = rng.choice(others)
    person, person2 = rng.sample(v["people"], 2)
    if kind == 0:
        role = rng.choice(sorted(v["roles"]))
        tool, tool2 = rng.sample(v["roles"][role], 2)
        role2 = rng.choice([r for r in sorted(v["roles"]) if r != role])
        if lang == "en":
            return (f"OK, final call: {project} goes with {tool} as its {role}.",
                    rng.choice((f"What was the final call on the {role} for {project}?",
                               f"Which {role} did we pick for {project} in the end?")),
                    [f"We looked at {tool2} as the {role} for {project} but it felt too heavy.",
                     f"For {other} we settled on {tool} as the {role}.",
                     f"{project} still needs a {role2}, let's decide next week.",
                     f"Did we pick anything for {other} yet? I think {tool2} for the {role}."], (project, role), [(other, role)])
        return (f"好，最终决定：{project}用{tool}做{role}。",
                rng.choice((f"{project}最后决定用哪个{role}？",
                               f"{project}最后选了哪个{role}？")),
                [f"{project}的{role}我们也看过{tool2}，但是太重了。",
                 f"{other}那边定了用{tool}做{role}。",
                 f"{project}还缺一个{role2}，下周再定吧。",
                 f"{other}选好了吗？我觉得{role}可以用{tool2}。"], (project, role), [(other, role)])
    if kind == 1:
        area = rng.choice(v["areas"])
        month = rng.choice(v["months"])
        if lang == "en":
            return (f"{person} takes over the {area} work on {project} from {month}.",
                    rng.choice((f"Who takes over the {area} work on {project}?",
                               f"Who is responsible for {area} on {project} now?")),
                    [f"{person2} asked whether {area} on {other} is still understaffed.",
                     f"{person} will review the {project} roadmap with us.",
                     f"Who wants the {area} dashboard for {other}? {person2} maybe.",
                     f"The {area} numbers for {project} look fine this month."], (project, area, 'owner'), [])
        return (f"从{month}开始，{project}的{area}工作由{person}接手。",
                rng.choice((f"{project}的{area}工作现在由谁接手？",
                               f"现在谁负责{project}的{area}？")),
                [f"{person2}问{other}的{area}是不是还缺人。",
                 f"{person}会和我们一起看{project}的路线图。",
                 f"谁要{other}的{area}看板？可能是{person2}。",
                 f"{project}这个月的{area}数据看起来还行。"], (project, area, 'owner'), [])
    if kind == 2:
        env = rng.choice(v["envs"])
        port, port2 = rng.sample(range(3000, 9999), 2)
        if lang == "en":
            return (f"Heads up: the {project} {env} server now listens on {port}.",
                    rng.choice((f"Which port does the {project} {env} server listen on now?",
                               f"What port does the {env} server of {project} use?")),
                    [f"The {other} {env} server listens on {port2}.",
                     f"Is the {project} server healthy? The dashboard looks red.",
                     f"We should move {project} to a new {rng.choice(v['envs'])} box soon.",
                     f"Which server hosts the {other} docs?"], (project, env), [(other, env)])
        return (f"提醒一下：{project}的{env}服务器端口改成了{port}。",
                rng.choice((f"{project}{env}服务器的端口改成了多少？",
                               f"{project}{env}的服务器用的是哪个端口？")),
                [f"{other}的{env}服务器端口是{port2}。",
                 f"{project}的服务器正常吗？看板一片红。",
                 f"{project}应该尽快换一台新的{rng.choice(v['envs'])}机器。",
                 f"{other}的文档放在哪台服务器上？"], (project, env), [(other, env)])
    if kind == 3:
        fmt = rng.choice(v["formats"])
        day = rng.choice(v["weekdays"])
        if lang == "en":
            return (f"{person} wants the {project} status as a {fmt} every {day}.",
                    rng.choice((f"In what form does {person} want the {project} status?",
                               f"How should the {project} status go to {person}?")),
                    [f"{person2} reads the {other} status on {day} mornings.",
                     f"{person} said the {project} kickoff went well.",
                     f"Send {person2} the {fmt} for {other}, please.",
                     f"What is the status of {project}? Nobody updated it."], (project, person), [(other, person2)])
        return (f"{person}希望每{day}收到{fmt}格式的{project}进展。",
                rng.choice((f"{person}希望怎么收到{project}的进展？",
                               f"{project}的进展应该怎么发给{person}？")),
                [f"{person2}每{day}上午看{other}的进展。",
                 f"{person}说{project}的启动会开得不错。",
                 f"请把{other}的{fmt}发给{person2}。",
                 f"{project}现在什么进展？没人更新。"], (project, person), [(other, person2)])
    if kind == 4:
        month = rng.choice(v["months"])
        reason = rng.choice(v["reasons"])
        if lang == "en":
            return (f"Because of {reason}, the {project} launch slips to {month} {rng.randint(1, 28)}.",
                    rng.choice((f"When does the {project} launch slip to?",
                               f"When are we launching {project} now?")),
                    [f"The {other} launch is still on track for {month}.",
                     f"{reason.capitalize()} might affect {other} too.",
                     f"Are we ready to launch the {project} beta page?",
                     f"Launch checklist for {other} is done."], (project, 'launch'), [(other, 'launch')])
        return (f"因为{reason}，{project}的上线推迟到{month}{rng.randint(1, 28)}号。",
                rng.choice((f"{project}的上线推迟到什么时候？",
                               f"{project}现在什么时候上线？")),
                [f"{other}的上线还是按{month}的计划。",
                 f"{reason}可能也会影响{other}。",
                 f"{project}的测试页面准备好上线了吗？",
                 f"{other}的上线检查清单做完了。"], (project, 'launch'), [(other, 'launch')])
    area = rng.choice(v["areas"])
    amount, amount2 = rng.randint(10, 90) * 1000, rng.randint(10, 90) * 1000
    if lang == "en":
        return (f"Finance approved {amount} for {project} {area} this quarter.",
                rng.choice((f"How much did finance approve for {area} on {project}?",
                               f"How much money do we have for {area} on {project}?")),
                [f"{other} {area} got {amount2} last quarter.",
                 f"Do we have enough people for {project}? Money is fine.",
                 f"The {area} spend on {other} is over plan.",
                 f"{project} needs a quarter review with finance."], (project, area, 'budget'), [(other, area, 'budget')])
    return (f"财务批了{project}本季度{area}的预算{amount}元。",
            rng.choice((f"财务给{project}的{area}批了多少预算？",
                               f"{project}的{area}有多少钱可以用？")),
            [f"{other}的{area}上季度拿到{amount2}元。",
             f"{project}人手够吗？钱没问题。",
             f"{other}的{area}花费超了计划。",
             f"{project}需要和财务做一次季度复盘。"], (project, area, 'budget'), [(other, area, 'budget')])


def build(seed: int, sessions: int, lang: str, facts_per_session: int = 2,
          question_share: float = 0.5) -> tuple[list[Turn], list[Question]]:
    """`sessions` chats in `lang` ("en" or "zh"); a share of their facts become questions."""
    rng = random.Random(f"{seed}-{lang}")
    v = EN if lang == "en" else ZH
    turns: list[Turn] = []
    pending: list[tuple[Any, Question]] = []
    statements: dict[Any, list[int]] = {}
    also_stated: set[Any] = set()
    for s in range(sessions):
        session = f"{lang}-{seed}-{s:05d}"
        start = BASE + dt.timedelta(days=rng.uniform(0, 300))
        project = rng.choice(v["projects"])
        lines: list[tuple[str, Any, str | None]] = []  # text, fact key (evidence only), question
        for _ in range(facts_per_session):
            evidence, question, distractors, key, also = _fact(rng, v, lang, project)
            also_stated.update(also)
            lines.append((evidence, key, question))
            lines += [(d, None, None) for d in rng.sample(distractors, rng.randint(2, len(distractors)))]
        lines += [(t, None, None) for t in rng.sample(v["small_talk"], 3)]
        rng.shuffle(lines)
        for i, (text, key, question) in enumerate(lines):
            at = start + dt.timedelta(minutes=2 * i, seconds=rng.randint(0, 59))
            if key is not None:
                statements.setdefault(key, []).append(len(turns))
                if rng.random() < question_share:
                    pending.append((key, Question(question or "", lang, len(turns))))
            turns.append(Turn(session, "inbound" if i % 2 == 0 else "outbound", at, text))
    # A fact stated again later (same project and slot) supersedes the earlier statement: the
    # evidence is the latest one, and only recency can tell it from the older, near-identical turns.
    # Facts a distractor also states about another project are left out (no single right answer).
    questions = []
    for key, q in pending:
        if key in also_stated:
            continue
        latest = max(statements[key], key=lambda i: turns[i].at)
        questions.append(Question(q.text, lang, latest))
    unique = {q.evidence: q for q in questions}  # one question per fact
    return turns, [unique[e] for e in sorted(unique)]


def _stamp(at: dt.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_archive(root: Path, desk_id: str, turns: list[Turn], clone: str = "benchclone01") -> list[str]:
    """Write `turns` as archive files in the contract's format (sorted keys, hash chain per file).

    Returns the event id of each turn, in the order of `turns`.
    """
    folder = root / ".system" / "archive"
    folder.mkdir(parents=True, exist_ok=True)
    by_day: dict[str, list[int]] = {}
    for i in sorted(range(len(turns)), key=lambda i: (turns[i].at, i)):
        by_day.setdefault(turns[i].at.strftime("%Y-%m-%d"), []).append(i)
    ids = [""] * len(turns)
    for day, indices in sorted(by_day.items()):
        prev = None
        out = bytearray()
        for seq, i in enumerate(indices, 1):
            turn = turns[i]
            stamp = _stamp(turn.at)
            ids[i] = f"{turn.at.strftime('%Y%m%dT%H%M%S%f')}Z-{clone}-{day.replace('-', '')}-{seq:06d}"
            rec = {"actor": "user" if turn.kind == "inbound" else "assistant", "at": stamp,
                   "content": turn.content, "desk_id": desk_id, "id": ids[i],
                   "kind": turn.kind, "meta": {"channel": "bench"}, "payload": None, "prev": prev,
                   "recorded_at": stamp, "session": turn.session}
            line = json.dumps(rec, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
            prev = "sha256:" + hashlib.sha256(line).hexdigest()
            out += line + b"\n"
        (folder / f"{day}.{clone}.jsonl").write_bytes(bytes(out))
    return ids
