"""Searchable terms: what recall indexes and what a query asks for (docs/recall.md "Terms").

Normalised text is cut into words, each reduced to its English Snowball stem (the same stem on
both sides, whatever the language), and CJK runs, each as its bigrams and single characters. A
query leaves out stop words unless nothing else is left.
"""

from __future__ import annotations

import functools
import re

import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no type hints

from desk.text.normalize import normalize
from desk.text.tokens import CJK_CLASS, CJK_FIRST

FIELD_MARK = "\x01"  # prefix of a second-field term (an event's speaker and searchable meta values)
TIME_TAG = "\0time"  # posted on records whose text names a time (no query term holds a NUL)
ASK_TAG = "\0ask"  # posted on conversation turns that end with a question (`is_question`)
STATES_TAG = "\0states"  # ... and that say something before they ask (`states_then_asks`)
_STEMMER = Stemmer.Stemmer("english")
_stem = _STEMMER.stemWords
_stem_word = _STEMMER.stemWord

EN_STOP = frozenset("""a about after again all also am an and any are as at be been before being both but by can could
did do does doing done for from get got had has have having he her here hers him his how i if in into is it its just
me more most my no nor not of off on once only or other our out over own same she should so some such than that the their
them then there these they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours s t don didn doesn isn wasn im ive id youre thats whats""".split())
# Particles, pronouns and question words; a bigram holding a particle (`的猫`) spans two words.
ZH_STOP = frozenset("的 了 吗 呢 吧 啊 呀 么 是 在 和 与 也 都 就 还 又 很 我 你 他 她 它 们 这 那 哪 谁 啥 个 么 "
                    "什么 怎么 哪些 哪个 哪里 哪儿 时候 为什么 怎样 如何 我们 你们 他们 她们 这个 那个 一个 有没有 是不是".split())
_ZH_PARTICLES = frozenset("的了吗呢吧啊呀么")
_STOP_STEMS = frozenset(_stem(sorted(EN_STOP)))
_WHEN_QUESTION = re.compile(r"\bwhen\b|\bwhat (?:date|day|time|year|month)\b|\bhow long ago\b"
                            r"|什么时候|哪天|何时|几号|哪一天|哪年|几月|多久以前", re.I)


@functools.cache
def _terms() -> re.Pattern[str]:
    """CJK runs and words, compiled on first use: CJK ranges are slow for `re` to compile."""
    return re.compile(rf"(?P<cjk>[{CJK_CLASS}]+)|(?P<word>[^\W_{CJK_CLASS}]+)")


@functools.cache
def _cjk() -> re.Pattern[str]:
    return re.compile(rf"[{CJK_CLASS}]")


@functools.cache
def _words_re() -> re.Pattern[str]:
    return re.compile(rf"[^\W_{CJK_CLASS}]+")


@functools.cache
def _words_below_cjk() -> re.Pattern[str]:
    """`_words_re` for a text below U+3040 (where `CJK_CLASS` starts), without the CJK ranges."""
    return re.compile(r"[^\W_]+")


def _words(words: list[str]) -> list[str]:
    return _stem(words) if words else words


def text_terms(text: str) -> list[str]:
    """The index terms of `text`, repeats kept: stemmed words, CJK bigrams and single characters."""
    normalized = normalize(text)
    if normalized.isascii() or max(normalized) < CJK_FIRST:  # "café — naïve": no CJK character in it
        return _words(_words_below_cjk().findall(normalized))
    if _cjk().search(normalized) is None:
        return _words(_words_re().findall(normalized))  # no CJK run: every term is a word (the common case)
    terms: list[str] = []
    for cjk, word in _terms().findall(normalized):
        if word:
            terms.append(_stem_word(word))
        else:
            terms.extend(cjk)
            terms.extend(cjk[i:i + 2] for i in range(len(cjk) - 1))
    return terms


def query_terms(text: str, *, characters: bool = True) -> list[str]:
    """The distinct terms a query asks for, sorted: stemmed words, the bigrams and (`characters`) the
    characters of each CJK run but a stop word's; stop words left out unless that leaves nothing."""
    normalized = normalize(text)
    words: list[str] = []
    cjk_terms: list[str] = []
    singles: list[str] = []
    if normalized.isascii() or max(normalized) < CJK_FIRST:  # no CJK character: every term is a word
        found = [("", word) for word in _words_below_cjk().findall(normalized)]
    else:
        found = _terms().findall(normalized)
    for cjk, word in found:
        if word:
            words.append(word)
        elif len(cjk) == 1:
            cjk_terms.append(cjk)
        else:
            grams = [cjk[i:i + 2] for i in range(len(cjk) - 1)]
            cjk_terms.extend(grams)
            asking = {j for i, g in enumerate(grams) if g in ZH_STOP for j in (i, i + 1)}  # 什么, 时候
            if characters:
                singles.extend(c for j, c in enumerate(cjk) if j not in asking)
    stemmed = _words(words)
    every = sorted(set(stemmed + cjk_terms))
    kept = [t for t, w in zip(stemmed, words) if w not in EN_STOP and t not in _STOP_STEMS]
    kept += [t for t in cjk_terms if t not in ZH_STOP and not (len(t) == 2 and (t[0] in _ZH_PARTICLES or t[1] in _ZH_PARTICLES))]
    kept += [c for c in singles if c not in ZH_STOP and c not in _ZH_PARTICLES]
    return sorted(set(kept)) or every


_TIME_TERMS = frozenset(_stem("""yesterday today tonight tomorrow ago weekend monday tuesday wednesday thursday
friday saturday sunday mondays saturdays sundays january february march april june july august september october
november december""".split())) | frozenset("""昨天 今天 明天 前天 上周 下周 这周 本周 周一 周二 周三 周四 周五 周六 周日 周末
星期 礼拜 去年 今年 明年 个月 一月 二月 三月 四月 五月 六月 七月 八月 九月 十月 一号 二号 三号""".split())
_PERIODS = frozenset(("week", "month", "year", "night", "time"))


def terms_name_time(terms: dict[str, int]) -> bool:
    """Whether a record's index terms name a time: a time word, `last`/`next` with a period, a year,
    an ordinal day."""
    if not _TIME_TERMS.isdisjoint(terms):
        return True
    if ("last" in terms or "next" in terms) and not _PERIODS.isdisjoint(terms):
        return True
    return any(len(t) == 4 and t.isdigit() and t[:2] in ("19", "20") or
               t[-2:] in ("st", "nd", "rd", "th") and t[:-2].isdigit() and t[:-2] for t in terms if t[:1].isdigit())


def asks_when(text: str) -> bool:
    """Whether a query asks when something happened ("When did…", "什么时候")."""
    return _WHEN_QUESTION.search(text) is not None


# A question mark (any form), then only closing quotes, brackets, emoji, symbols and spaces.
@functools.cache
def _ends_asking() -> re.Pattern[str]:  # compiled when a record is built, not by every query
    return re.compile(r"[?？﹖؟][?!？！]*[^\w.!?。！？﹖؟…]*\Z")


def is_question(text: str) -> bool:
    """Whether a conversation turn ends by asking something: the turn after it is its answer."""
    return _ends_asking().search(text) is not None


def states_then_asks(text: str) -> bool:
    """Whether a turn that ends with a question says something first (a sentence end, then a word,
    before a `?`): a reply can echo what it stated."""
    return is_question(text) and any(
        (end := re.search(r"[.!。！…]", asked)) is not None and re.search(r"\w", asked[end.end():]) is not None
        for asked in re.split(r"[?？﹖؟]", text)[:-1])
