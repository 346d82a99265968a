"""Facts: about the user ("I live in Porto"), their relations ("my sister Ana works at
Google") and named people ("Ana has a dog named Rex")."""
from __future__ import annotations

import re
from typing import Optional

from ._objects import _object, _object_at
from ._shapes import ATTRIBUTES, Item, _item
from ._text import _VERB_WORDS

_I = re.IGNORECASE


_NAME_STOP = set("""I The This That These Those It He She They We You There Here My Our Your His Her Their Its
Everyone Everybody Someone Somebody Nobody No One People Most Many Some All Each Every Today Tomorrow Yesterday
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August
September October November December What Which Who Why How When Where If And But So Also Then Now Anyway Yes
Ok Okay Maybe Perhaps Probably Honestly Actually Well Oh Please Let Sure Thanks Thank Hi Hello Hey""".split())
_NAME = r"(?-i:(?P<name>[A-Z][a-zà-ÿ]+(?:[-'][A-Z][a-zà-ÿ]+)?(?:\s+[A-Z][a-zà-ÿ]+){0,2}))"
RELATIONS = (r"sister|brother|mother|mom|mum|father|dad|wife|husband|partner|boyfriend|girlfriend|fiancée|fiancee"
             r"|fiancé|fiance|son|daughter|kid|child|cousin|aunt|uncle|grandmother|grandma|grandfather|grandpa"
             r"|niece|nephew|friend|best\s+friend|roommate|flatmate|housemate|boss|manager|colleague|coworker"
             r"|co-worker|teammate|mentor|neighbou?r|therapist|dentist|doctor|landlord|dog|cat|pet|puppy|kitten"
             r"|parrot|hamster|rabbit|horse|twin|stepmother|stepfather|stepsister|stepbrother|baby|cofounder"
             r"|co-founder")
_RELATION = rf"(?P<rel>(?:(?:older|younger|little|big|baby|eldest|oldest|youngest|twin|best|new)\s+)?(?:{RELATIONS}))"

_MOVED_FROM = r"(?:\s+(?:back|away|over|here|there))?(?:\s+from\s+(?-i:[A-Z])[^,;]{0,60}?)?"
# A move is to where one lives now ("moved from Berlin to Lisbon": lives in Lisbon): a place named
# with a capital, not a day, a month or a workplace ("moved the meeting to Friday", "to a new team").
_NOT_A_PLACE = re.compile(r"\b(?:team|job|role|company|department|position|project|office|desk|floor|meeting"
                          r"|room|server|branch|shift|slot|channel|version|account|plan|section|group|class)\b", _I)
_MOVED = {"moved to": "lives in"}

# (first-person verb forms, third-person forms, predicate, prepositions or "" for a direct object,
#  whether the object must look like a name, number or determined noun phrase)
_VERBS = (
    (r"live|am\s+living|have\s+(?:been\s+living|lived)", r"lives|is\s+living|has\s+(?:been\s+living|lived)",
     "lives", "in|at|near|on", False),
    (r"work|am\s+working|have\s+(?:been\s+working|worked)", r"works|is\s+working|has\s+(?:been\s+working|worked)",
     "works", "at|for|in|as|from", False),
    (r"study|am\s+studying", r"studies|is\s+studying", "studies", "at|in", True),
    (r"teach|am\s+teaching", r"teaches|is\s+teaching", "teaches", "at|in", True),
    (r"grew\s+up", r"grew\s+up", "grew up", "in|on|near", False),
    (r"was\s+born", r"was\s+born", "was born", "in|on", False),
    (rf"(?:have\s+)?(?:just\s+|recently\s+)?moved{_MOVED_FROM}",
     rf"(?:has\s+)?(?:just\s+|recently\s+)?moved{_MOVED_FROM}", "moved", "to", True),
    (r"am|come", r"is|comes", "is", "from", True),
    (r"am\s+based", r"is\s+based", "is based", r"in|at|out\s+of", False),
    (r"graduated", r"graduated", "graduated", "from", True),
    (r"am\s+allergic", r"is\s+allergic", "is allergic", "to", False),
    (r"am\s+married", r"is\s+married", "is married", "to", True),
    (r"am\s+engaged", r"is\s+engaged", "is engaged", "to", True),
    (r"own", r"owns", "owns", "", True),
    (r"drive", r"drives", "drives", "", True),
    (r"speak", r"speaks", "speaks", "", True),
    (r"use", r"uses", "uses", "", True),
    (r"play", r"plays", "plays", "", False),
    (r"am\s+learning", r"is\s+learning", "is learning", "", False),
    (r"teach", r"teaches", "teaches", "", False),
    (r"am\s+(?=[\w-]*(?:vegetarian|vegan|pescatarian|intolerant|diabetic|celiac|coeliac|left-handed"
     r"|right-handed|colou?rblind)\b)", r"is\s+(?=[\w-]*(?:vegetarian|vegan|pescatarian|intolerant|diabetic"
     r"|celiac|coeliac|left-handed|right-handed|colou?rblind)\b)", "is", "", False),
    (r"am\s+(?=\d{1,3}(?:\s+years?\s+old\b|\s*$))", r"is\s+(?=\d{1,3}(?:\s+years?\s+old\b|\s*$))", "is", "", False),
    (r"study", r"studies", "studies", "", False),
    (r"am\s+(?=an?\s+(?!bit\b|little\b|lot\b|tad\b)(?!.*\bfan\b))", None, "is", "", False),
)
_FACT_ADV = r"(?:(?:also|still|currently|actually|now|really|just|both|all|already|even|mostly|mainly)\s+)*"


def _verb_patterns(person: int) -> list[tuple[re.Pattern, str, bool]]:
    """(pattern, predicate, whether the object must be proper) for first- or third-person verbs."""
    out = []
    for first, third, predicate, preps, proper in _VERBS:
        forms = first if person == 1 else third
        if forms is None:
            continue
        prep = rf"\s+(?P<prep>{preps})\b" if preps else ""
        out.append((re.compile(rf"^{_FACT_ADV}(?:{forms}){prep}\s*(?P<rest>.+)$", _I), predicate, proper))
    return out


_FIRST_VERBS = _verb_patterns(1)
_THIRD_VERBS = _verb_patterns(3)
_HAVE = re.compile(rf"^(?:have|has|have\s+got|has\s+got)\s+(?P<det>an?|one|two|three|four|\d)\s+(?:[\w-]+\s+)?"
                   rf"{_RELATION}(?:s|ren)?\b(?:\s*,?\s+(?:named|called)\s+{_NAME})?\s*[.!]?$", _I)
_MY_REL = re.compile(rf"^my\s+{_RELATION}(?:\s*,?\s+{_NAME}\s*,?)?\s+(?P<rest>.+)$", _I)
_MY_ATTR = re.compile(r"^my\s+(?P<attr>[\w-]+(?:\s+[\w-]+)?)\s+(?:is|=)\s+(?P<rest>.+)$", _I)
_REL_NAMED = re.compile(rf"^(?:my|our)\s+{_RELATION}(?:'s\s+name\s+is|\s+is\s+(?:called|named)|\s+is)\s+"
                        rf"{_NAME}\s*[.!]?$", _I)
_NOT_A_NAME = set("""English Spanish French German Italian Portuguese Chinese Japanese Korean American British
Canadian Mexican Brazilian Indian Russian Dutch Irish Scottish Welsh Polish Swedish Greek Turkish Australian
African Asian European Catholic Christian Muslim Jewish Hindu Buddhist Vegan Vegetarian""".split())
_IS_MY = re.compile(rf"^{_NAME}\s+is\s+my\s+(?P<what>[\w-]+(?:\s+[\w-]+)?)\s*[.!]?$", _I)
_THIRD = re.compile(rf"^{_NAME}\s+(?P<rest>.+)$", _I)


_AND_NOW = re.compile(r"^I\s+(?:[\w'-]+\s+){1,4}?and\s+now\s+(?P<rest>.+)$", _I)


def _facts(clause: str, role: str) -> list[Optional[Item]]:
    """The facts of one clause: about the user, a relation of theirs, or a named person."""
    if role == "user":
        if re.match(r"^I\s", clause, _I):
            now = _AND_NOW.match(clause)  # "I changed jobs and now work at Acme"
            return (_verb_facts("user", clause[2:], _FIRST_VERBS) or _have(clause[2:], "user")
                    or (_verb_facts("user", now.group("rest"), _FIRST_VERBS) if now else []))
        mine = _my_facts(clause)
        if mine is not None:
            return mine
    return _named_facts(clause)


_INNER_ADV = re.compile(r"\b(?-i:[a-z]+ly|currently|still|also|already|now|just)\s+(?=(?:"
                        rf"{_VERB_WORDS}|from|in|at|for|to|living|working|studying|based|born|married|engaged"
                        r"|allergic|learning|moved|an?)\b)", _I)


def _verb_facts(subject: str, rest: str, patterns) -> list[Optional[Item]]:
    """The fact of the first verb pattern matching `rest`, and of each "... and <verb> ..." after
    it (read in a loop, so a long chain of them costs no stack)."""
    items: list[Optional[Item]] = []
    while rest is not None:
        found = _verb_fact(subject, rest, patterns)
        if found is None:
            break
        item, rest = found
        items.append(item)
    return items


def _verb_fact(subject: str, rest: str, patterns) -> Optional[tuple[Optional[Item], Optional[str]]]:
    """The fact of the first verb pattern matching `rest`, and the text after its "and" that
    may hold another (None when there is none); None when no fact starts `rest`."""
    rest = _INNER_ADV.sub("", rest)
    for pattern, predicate, proper in patterns:
        found = pattern.match(rest)
        if not found:
            continue
        prep = found.group("prep") if "prep" in pattern.groupindex else None
        obj, end = _object_at(found.group("rest"), proper=proper or (prep or "").lower() in ("at", "for"))
        if obj is None:
            return None
        full = f"{predicate} {' '.join(prep.lower().split())}" if prep else predicate
        if full in _MOVED and not _place(obj):
            return None
        full = _MOVED.get(full, full)
        after = re.match(r"^[^,;]{0,30}?\s*,?\s*\band\s+(?P<next>.+)$", found.group("rest")[end:], _I)
        return _item("fact", subject=subject, predicate=full, object=obj), after.group("next") if after else None
    return None


def _place(obj: str) -> bool:
    """Whether a moved-to object names a place: a capitalised word first (after an article),
    not a day or month, nor a workplace."""
    words = re.sub(r"^the\s+", "", obj, flags=_I).split()
    return words[0][:1].isupper() and words[0] not in _NAME_STOP and not _NOT_A_PLACE.search(obj)


def _have(rest: str, subject: str) -> list[Optional[Item]]:
    found = _HAVE.match(rest)
    if not found:
        return []
    rel = " ".join(found.group("rel").lower().split())
    if found.group("name"):
        return [_item("fact", subject=subject, predicate=f"has {rel}", object=found.group("name"))]
    return [_item("fact", subject=subject, predicate="has", object=_object(rest.split(None, 1)[1]))]


def _my_facts(clause: str) -> Optional[list[Optional[Item]]]:
    """Facts from "my sister Ana lives in ...", "my dog is called Rex", "my name is Dana";
    None when the clause is not about something of the user's."""
    named = _REL_NAMED.match(clause)
    if named and named.group("name").split()[0] not in _NOT_A_NAME | _NAME_STOP:
        return [_relation("user", named.group("rel"), named.group("name"))]
    attr = _MY_ATTR.match(clause)
    if attr and " ".join(attr.group("attr").lower().split()) in ATTRIBUTES:
        obj = _object(attr.group("rest"))
        return [_item("fact", subject="user", predicate=" ".join(attr.group("attr").lower().split()),
                      object=obj)] if obj else []
    rel = _MY_REL.match(clause)
    if not rel:
        return None
    name = rel.group("name")
    subject = name or f"user's {' '.join(rel.group('rel').lower().split())}"
    items = [_relation("user", rel.group("rel"), name)] if name else []
    return items + (_verb_facts(subject, rel.group("rest"), _THIRD_VERBS) or _is_a(subject, rel.group("rest")))


def _is_a(subject: str, rest: str) -> list[Optional[Item]]:
    found = re.match(r"^is\s+(?P<obj>an?\s+.+)$", rest, _I)
    obj = _object(found.group("obj")) if found else None
    return [_item("fact", subject=subject, predicate="is", object=obj)] if obj else []


def _relation(subject: str, rel: str, name: Optional[str]) -> Optional[Item]:
    rel = " ".join(rel.lower().split())
    return _item("fact", subject=subject, predicate=f"has {rel}", object=name) if name else None


def _named_facts(clause: str) -> list[Optional[Item]]:
    """"Ana is my sister", "Ana works at Google", "Ana has a dog named Rex"."""
    found = _IS_MY.match(clause)
    if found and found.group("name").split()[0] not in _NAME_STOP:
        what = " ".join(found.group("what").lower().split())
        if re.fullmatch(_RELATION, what, _I):
            return [_relation("user", what, found.group("name"))]
        return [_item("fact", subject="user", predicate=what, object=found.group("name"))] if what in ATTRIBUTES else []
    found = _THIRD.match(clause)
    if not found or found.group("name").split()[0] in _NAME_STOP:
        return []
    name, rest = found.group("name"), found.group("rest")
    return _verb_facts(name, rest, _THIRD_VERBS) or _have(rest, name)
