"""Deterministic knowledge extraction: facts, preferences, decisions, skills and beliefs found in
one message by whole-word rules, sentence by sentence (no LLM).

Precision comes first, since a wrong item in someone's memory is worse than a missed one: a
sentence that asks, supposes, wishes, requests, doubts what it knows, reports someone else's
words or looks like code yields nothing. First-person subjects become "user" (role "user" only).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from .errors import InvalidInput

KINDS = ("fact", "preference", "decision", "skill", "belief")
ROLES = ("user", "assistant")
MAX_TEXT_CHARS = 200_000  # extraction is best effort: the rest of a longer text is not read
MAX_OBJECT_WORDS = 8
_I = re.IGNORECASE


@dataclass
class Item:
    """One piece of knowledge: its kind, a readable one-line rendering and its structured parts."""

    kind: str  # fact | preference | decision | skill | belief
    text: str  # the rendering, stored as the memory content
    parts: dict = field(default_factory=dict)


def extract(text: str, role: str = "user") -> list[Item]:
    """The knowledge stated in `text`, a message written by `role` ("user" or "assistant")."""
    if not isinstance(text, str):
        raise InvalidInput(f"Text to extract from must be a string, not {type(text).__name__}.")
    if role not in ROLES:
        raise InvalidInput(f"Unknown role {role!r}; choose user or assistant.")
    text = _without_code(_plain_quotes(text[:MAX_TEXT_CHARS]))
    items, rest = _skill_blocks(text)
    for sentence in _sentences(rest):
        items.extend(_from_sentence(sentence, role))
    return _unique(items)


# -- item shapes and their renderings ---------------------------------------------------------

def make_item(kind: str, parts: dict) -> Item:
    """An Item of `kind` from its parts, checked and rendered; bad parts raise InvalidInput."""
    if kind not in KINDS:
        raise InvalidInput(f"Unknown item kind {kind!r}; choose one of {', '.join(KINDS)}.")
    if not isinstance(parts, dict):
        raise InvalidInput(f"The parts of a {kind} must be a dict, not {type(parts).__name__}.")
    parts = _CHECKS[kind](parts)
    return Item(kind, _RENDER[kind](parts), parts)


def _text(parts: dict, name: str, kind: str, optional: bool = False) -> Optional[str]:
    value = parts.get(name)
    if optional and value in (None, ""):
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"A {kind}'s {name} must be a non-empty string, not {value!r}.")
    if SECRETISH.search(value):
        raise InvalidInput(f"A {kind}'s {name} looks like a secret (an email, key or token).")
    return " ".join(value.split())


def _polarity(parts: dict, kind: str) -> int:
    value = parts.get("polarity", 1)
    if isinstance(value, bool) or value not in (1, -1):
        raise InvalidInput(f"A {kind}'s polarity must be 1 or -1, not {value!r}.")
    return int(value)


def _check_fact(parts: dict) -> dict:
    return {name: _text(parts, name, "fact") for name in ("subject", "predicate", "object")}


def _check_preference(parts: dict) -> dict:
    subject = _text(parts, "subject", "preference", optional=True) or "user"
    return {"subject": subject, "object": _text(parts, "object", "preference"),
            "polarity": _polarity(parts, "preference")}


def _check_decision(parts: dict) -> dict:
    return {"choice": _text(parts, "choice", "decision"),
            "reason": _text(parts, "reason", "decision", optional=True)}


def _check_skill(parts: dict) -> dict:
    steps = parts.get("steps")
    if not isinstance(steps, (list, tuple)) or len(steps) < 2:
        raise InvalidInput(f"A skill needs a list of at least 2 steps, not {steps!r}.")
    return {"purpose": _text(parts, "purpose", "skill"),
            "steps": [_text({"step": step}, "step", "skill") for step in steps]}


def _check_belief(parts: dict) -> dict:
    confidence = parts.get("confidence", 0.7)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise InvalidInput(f"A belief's confidence must be a number from 0 to 1, not {confidence!r}.")
    return {"proposition": _text(parts, "proposition", "belief"),
            "polarity": _polarity(parts, "belief"), "confidence": float(confidence)}


def _render_fact(p: dict) -> str:
    if p["predicate"] in ATTRIBUTES:
        return f"{p['subject']}'s {p['predicate']} is {p['object']}"
    return f"{p['subject']} {p['predicate']} {p['object']}"


def _render_preference(p: dict) -> str:
    verb = "likes" if p["polarity"] == 1 else "dislikes"
    return f"{p['subject']} {verb} {p['object']}"


def _render_decision(p: dict) -> str:
    return f"Decision: {p['choice']}" + (f" — because {p['reason']}" if p["reason"] else "")


def _render_skill(p: dict) -> str:
    return f"How to {p['purpose']}: " + " ".join(f"{n}. {s}" for n, s in enumerate(p["steps"], 1))


def _render_belief(p: dict) -> str:
    text = p["proposition"] if p["polarity"] == 1 else negate(p["proposition"])
    return text[:1].upper() + text[1:]


_AUX = re.compile(r"\b(?:is|are|was|were|will|would|can|could|should|must|has|have|had|may|might)\b", _I)


def negate(proposition: str) -> str:
    """The proposition denied: "not" after its first auxiliary verb when it has one ("the API
    is not stable"), else "it is not the case that ..."."""
    found = _AUX.search(proposition)
    if found:
        return f"{proposition[:found.end()]} not{proposition[found.end():]}"
    return f"it is not the case that {proposition}"


_CHECKS: dict[str, Callable[[dict], dict]] = {
    "fact": _check_fact, "preference": _check_preference, "decision": _check_decision,
    "skill": _check_skill, "belief": _check_belief}
_RENDER: dict[str, Callable[[dict], str]] = {
    "fact": _render_fact, "preference": _render_preference, "decision": _render_decision,
    "skill": _render_skill, "belief": _render_belief}


def _item(kind: str, **parts) -> Optional[Item]:
    """make_item for the rules: a part that looks like a secret or is empty drops the item."""
    try:
        return make_item(kind, parts)
    except InvalidInput:
        return None


def _unique(items: list[Optional[Item]]) -> list[Item]:
    seen: set[tuple[str, str]] = set()
    kept = []
    for item in items:
        if item is not None and (item.kind, item.text) not in seen:
            seen.add((item.kind, item.text))
            kept.append(item)
    return kept


# -- text preparation ---------------------------------------------------------------------------

SECRETISH = re.compile(r"@|\[REDACTED|\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{20,}\b"
                       r"|\d[\d\s\-]{7,}\d")
_FENCE = re.compile(r"^\s*(```|~~~).*?(?:^\s*\1\s*$|\Z)", re.M | re.S)
_CONTRACTIONS = {
    "i'm": "I am", "i've": "I have", "i'd": "I would", "i'll": "I will", "we're": "we are",
    "we've": "we have", "we'll": "we will", "we'd": "we would", "let's": "let us",
    "don't": "do not", "doesn't": "does not", "didn't": "did not", "can't": "cannot",
    "won't": "will not", "isn't": "is not", "aren't": "are not", "wasn't": "was not",
    "weren't": "were not", "haven't": "have not", "hasn't": "has not", "shouldn't": "should not",
    "wouldn't": "would not", "couldn't": "could not", "it's": "it is", "that's": "that is",
    "there's": "there is", "he's": "he is", "she's": "she is", "what's": "what is",
    "you're": "you are", "they're": "they are", "i'ma": "I am going to", "ain't": "is not"}
_CONTRACTION = re.compile(r"\b(?:" + "|".join(re.escape(c) for c in _CONTRACTIONS) + r")\b", _I)


def _plain_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')


def _without_code(text: str) -> str:
    """Fenced code blocks removed (each leaves a blank line, so sentences do not join)."""
    return _FENCE.sub("\n", text)


_NOUN_IS = re.compile(r"\b((?:my|our)\s+[\w-]+)'s\s+(?=(?-i:[A-Z0-9])|an?\b|the\b|from\b|in\b)", _I)


def expand(sentence: str) -> str:
    """Contractions written out ("I'm" -> "I am", "don't" -> "do not", "my name's" -> "my name
    is"), keeping initial capitals."""
    def full(match: re.Match) -> str:
        word = _CONTRACTIONS[match.group(0).lower()]
        return word[:1].upper() + word[1:] if match.group(0)[:1].isupper() else word
    return _NOUN_IS.sub(r"\1 is ", _CONTRACTION.sub(full, sentence))


_ABBREVIATIONS = {"e.g", "i.e", "mr", "mrs", "ms", "dr", "st", "vs", "etc", "approx", "jr", "sr",
                  "inc", "ltd", "no", "fig", "prof"}
_CONTINUES = re.compile(r"^(?:then|next|finally|lastly|after\s+that|afterwards)\b", _I)
_STARTS_STEPS = re.compile(r"^(?:here\s+is\s+|here's\s+)?(?:how\s+to|(?:the\s+)?steps\s+to|to|first)\b", _I)


def _sentences(text: str) -> list[str]:
    """Lines split at sentence ends, not after an abbreviation or a list number ("2."); a
    "Then ..." sentence after "To X, first ..." is kept with it."""
    out: list[str] = []
    for line in text.splitlines():
        merged: list[str] = []
        for piece in re.split(r"(?<=[.!?])\s+", line.strip()):
            if merged and (_no_break(merged[-1]) or (_CONTINUES.match(piece) and _STARTS_STEPS.match(merged[-1]))):
                merged[-1] += " " + piece
            elif piece:
                merged.append(piece)
        out.extend(merged)
    return out


def _no_break(previous: str) -> bool:
    if previous.endswith(("!", "?")):
        return False
    last = previous.rsplit(None, 1)[-1].rstrip(".").lower()
    return last in _ABBREVIATIONS or last.isdigit() or (len(last) == 1 and last.isalpha())


# -- what is never knowledge --------------------------------------------------------------------

_QUESTION = re.compile(r"^(?:do|does|did|can|could|would|will|should|shall|is|are|am|was|were|have|has|"
                       r"had|what|where|when|why|who|whom|whose|which|how(?!\s+to\b)|may|must|any\s+idea)\b", _I)
_NOT_KNOWLEDGE = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|hypothetically|assuming|in\s+case|whether"  # hypotheticals
    r"|wonder|wondering|wish|hope|hoping|would\s+(?:love|like|prefer|rather)|want\s+to|wanna"  # wishes
    r"|can\s+you|could\s+you|would\s+you|will\s+you|please|remind\s+me|tell\s+me|let\s+me\s+know"
    r"|help\s+me|show\s+me|give\s+me|I\s+need\s+you|I\s+want\s+you|make\s+sure)\b", _I)  # requests
_DOUBTED = re.compile(
    r"\b(?:do\s+not\s+know|did\s+not\s+know|no\s+idea|no\s+clue|not\s+sure|unsure|not\s+certain"
    r"|do\s+not\s+remember|cannot\s+remember|can\s+not\s+remember|forgot|forget"  # doubts
    r"|said|says|told|tells|asked|claims?|claimed|according\s+to|heard|reportedly"  # someone else's words
    r"|used\s+to|anymore|no\s+longer|formerly|previously|pretend|joking|kidding|sarcasm)\b", _I)
_CODE = re.compile(r"[`{}]|=>|==|!=|\w\(\)|\s=\s|\w=\w|;\s*$|^\s*(?:\$|>>>|#include|def\s|class\s|import\s)")
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself|we|us|our|ours|ourselves)\b", _I)
_PREAMBLE = re.compile(r"^(?:(?:please\s+)?(?:remember|note|keep\s+in\s+mind|bear\s+in\s+mind)\s+(?:that\s+)?"
                       r"|(?:fyi|btw|by\s+the\s+way|just\s+so\s+you\s+know|for\s+the\s+record|for\s+context)"
                       r"\s*[,:-]?\s+)", _I)


def _skipped(sentence: str, role: str) -> bool:
    """Questions, hypotheticals, wishes, requests, code; for the assistant, anything in the
    first person. (Doubts, reported words and the past are ruled out clause by clause.)"""
    return (sentence.endswith("?") or bool(_QUESTION.match(sentence)) or bool(_NOT_KNOWLEDGE.search(sentence))
            or bool(_CODE.search(sentence)) or (role == "assistant" and bool(_FIRST_PERSON.search(sentence))))


# -- sentences ---------------------------------------------------------------------------------

_HEDGED = re.compile(r"\b(?:think|believe|reckon|suspect|guess|feel\s+(?:that|like)|probably|likely|maybe"
                     r"|perhaps|might|possibly|may\s+be|could\s+be|seems?|apparently|convinced|opinion|imo|imho)\b", _I)


def _from_sentence(sentence: str, role: str) -> list[Optional[Item]]:
    sentence = _PREAMBLE.sub("", expand(sentence.strip()))
    if not sentence or _skipped(sentence, role):
        return []
    skill = _inline_skill(sentence)
    if skill is not None:
        return [skill]
    return [item for clause in _clauses(sentence) if not _DOUBTED.search(clause)
            for item in (_facts(clause, role) if role == "assistant" else _from_clause(clause))]


def _from_clause(clause: str) -> list[Optional[Item]]:
    """A user clause's items: beliefs when it hedges (and nothing else then), else a decision,
    else preferences and facts."""
    beliefs = _beliefs(clause)
    if beliefs or _HEDGED.search(clause):
        return beliefs
    decision = _decision(clause)
    if decision is not None:
        return [decision]
    return _preferences(clause) + _facts(clause, "user")


_VERB_WORDS = ("lives?|works?|stud(?:y|ies)|teach(?:es)?|grew|was|moved|is|am|comes?|graduated|owns?|drives?"
               "|speaks?|uses?|plays?|has|have|loves?|likes?|hates?|enjoys?|prefers?")
_CLAUSE_BREAK = re.compile(r"\s*;\s*|,?\s+but\s+|,\s+and\s+(?=I\b|my\b)|\s+and\s+(?=I\b)|,\s+so\s+|\s+so\s+(?=I\b)"
                           r"|,\s+(?:though|although)\s+"
                           r"|\s+-\s+|\s+—\s+", _I)
_FILLER = re.compile(r"^(?:and|but|so|also|well|oh|yeah|yes|ok|okay|actually|honestly|anyway|now|currently"
                     r"|nowadays|these\s+days|plus|still|at\s+the\s+moment|right\s+now|personally)\b\s*,?\s*", _I)


_CARRIED = re.compile(rf"^(?-i:(?:{_VERB_WORDS}|hate|dislike|enjoy|adore|prefer|cannot\s+stand)\b)")


def _clauses(sentence: str) -> list[str]:
    """The sentence's main clauses, each without leading fillers ("Honestly, ...", "but now ...");
    a clause without a subject after one starting with "I" gets it ("I love tea but hate coffee")."""
    clauses: list[str] = []
    for clause in _CLAUSE_BREAK.split(sentence.rstrip(" .!")):
        while (stripped := _FILLER.sub("", clause, count=1)) != clause:
            clause = stripped
        if clauses and re.match(r"^I\s", clauses[0], _I) and _CARRIED.match(clause):
            clause = f"I {clause}"
        if clause:
            clauses.append(clause)
    return clauses


# -- objects -----------------------------------------------------------------------------------

_STOP = re.compile(
    rf"\s*(?:[,;:()]|\s-\s|\s—\s|\.(?:\s|$)|!|\?)|\s+(?:but|because|since|so|though|although|which|where|who|when"
    rf"|while|whereas|unless|until|that|and\s+(?:(?:now|also|still)\s+)?(?:I|we|my|she|he|they|it|you|{_VERB_WORDS})"
    r"|as\s+(?:a|an|the|well)|with\s+(?:my|his|her|their|our)|in\s+the\s+end|too|these\s+days"
    r"|at\s+the\s+moment|right\s+now|currently|nowadays|now\b|anyway|a\s+lot\b|so\s+much|very\s+much"
    r"|for\s+(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|many|several|the\s+past|over|almost"
    r"|nearly|about|years|months|weeks|ages)\b|in\s+\d{4}\b|since\b|last\s+(?:year|month|week|summer|winter"
    r"|spring|fall|autumn)|(?:this|next)\s+(?:year|month|week)|recently|lately|ago)\b", _I)
_BAD_START = re.compile(r"^(?:it|that|this|these|those|them|him|her|you|your|what|how|when|where|why|which|who"
                        r"|being|everything|nothing|something|anything|everyone|anyone|someone|the\s+idea|one"
                        r"|so|too|very|not|to\s+be)\b", _I)
_YOU = re.compile(r"\b(?:you|your|yours)\b", _I)


def _object(text: str, proper: bool = False) -> Optional[str]:
    """The object at the start of `text`, up to the end of its phrase; None when it is a
    pronoun, too long, secret-looking, or (for `proper`) without a name, number or determiner."""
    return _object_at(text, proper)[0]


def _object_at(text: str, proper: bool = False) -> tuple[Optional[str], int]:
    """_object, and where its phrase ends in `text`."""
    found = _STOP.search(text)
    end = found.start() if found else len(text)
    phrase = re.sub(r"^to\s+", "", text[:end].strip(" .!,;:\"'"), flags=_I)
    words = phrase.split()
    if (not words or len(words) > MAX_OBJECT_WORDS or all(w.lower() in ("a", "an", "the") for w in words)
            or _BAD_START.match(phrase) or _YOU.search(phrase) or SECRETISH.search(phrase)
            or (proper and not _proper(words))):
        return None, end
    return re.sub(r"\bmy\b", "user's", phrase, flags=_I), end


def _proper(words: list[str]) -> bool:
    """Whether a phrase names something: a capitalised word, a number, or a determiner first."""
    return (any(w[:1].isupper() or w[:1].isdigit() for w in words)
            or words[0].lower() in ("a", "an", "the", "my", "two", "three"))


# -- preferences -------------------------------------------------------------------------------

_ADV = (r"(?:really|also|just|absolutely|totally|genuinely|actually|still|kind\s+of|kinda|sort\s+of|do|truly"
        r"|especially|particularly|usually|generally|definitely|honestly|quite|always|much|simply|personally"
        r"|secretly|mostly|very\s+much|so|seriously)")
_LIKE = re.compile(rf"^I\s+(?:{_ADV}\s+)*(?:like|love|enjoy|adore|prefer|am\s+(?:{_ADV}\s+)*into"
                   r"|am\s+(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+|total\s+)?fan\s+of"
                   r"|am\s+(?:very\s+|really\s+)?fond\s+of"
                   r"|am\s+(?:obsessed\s+with|crazy\s+about|passionate\s+about))\s+(?P<object>.+)$", _I)
_FAN = re.compile(r"^I\s+am\s+(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+|total\s+)?"
                  r"(?P<object>[\w'-]+(?:\s+[\w'-]+){0,2}?)\s+fan$", _I)
_DISLIKE = re.compile(rf"^I\s+(?:{_ADV}\s+)*(?:hate|dislike|detest|loathe|despise|cannot\s+stand|can\s+not\s+stand"
                      rf"|do\s+not\s+(?:{_ADV}\s+)*(?:like|enjoy|love|care\s+for)|never\s+(?:like|enjoy)"
                      r"|am\s+not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|am\s+not\s+(?:really\s+)?(?:into|fond\s+of))"
                      r"\s+(?P<object>.+)$", _I)
_FAVOURITE = re.compile(r"^my\s+(?:all[-\s]time\s+|absolute\s+|very\s+)?(?P<least>least\s+)?favou?rite\s+"
                        r"(?P<what>[\w-]+(?:\s+[\w-]+){0,2}?)\s+(?:is|are)\s+(?P<object>.+)$", _I)
_IS_FAVOURITE = re.compile(r"^(?P<object>[^\s,;][^,;]{0,40}?)\s+(?:is|are)\s+my\s+(?:all[-\s]time\s+|absolute\s+)?"
                           r"(?P<least>least\s+)?favou?rite\b(?:\s+(?P<what>[\w-]+(?:\s+[\w-]+){0,2}))?$", _I)
_COMPARED = re.compile(r"\s+(?:over|to|rather\s+than|instead\s+of|more\s+than|better\s+than)\s+.*$", _I)


def _preferences(clause: str) -> list[Optional[Item]]:
    for pattern, polarity in ((_DISLIKE, -1), (_LIKE, 1), (_FAN, 1)):
        found = pattern.match(clause)
        if found:
            obj = _object(_COMPARED.sub("", re.sub(r"^to\s+", "", found.group("object"), flags=_I)))
            return [_item("preference", subject="user", object=obj, polarity=polarity)] if obj else []
    return _favourite(clause)


def _favourite(clause: str) -> list[Optional[Item]]:
    found = _FAVOURITE.match(clause) or _IS_FAVOURITE.match(clause.rstrip(" .!"))
    if not found:
        return []
    obj = _object(found.group("object"))
    if obj is None or (found.re is _IS_FAVOURITE and _FILLER.match(obj)):
        return []
    return [_item("preference", subject="user", object=obj, polarity=-1 if found.group("least") else 1)]


# -- facts -------------------------------------------------------------------------------------

_NAME_STOP = set("""I The This That These Those It He She They We You There Here My Our Your His Her Their Its
Everyone Everybody Someone Somebody Nobody No One People Most Many Some All Each Every Today Tomorrow Yesterday
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August
September October November December What Which Who Why How When Where If And But So Also Then Now Anyway Yes
Ok Okay Maybe Perhaps Probably Honestly Actually Well Oh Please Let Sure Thanks Thank Hi Hello Hey""".split())
_NAME = r"(?-i:(?P<name>[A-Z][a-zà-ÿ]+(?:[-'][A-Z][a-zà-ÿ]+)?(?:\s+[A-Z][a-zà-ÿ]+){0,2}))"
RELATIONS = ("sister|brother|mother|mom|mum|father|dad|wife|husband|partner|boyfriend|girlfriend|fiancée|fiancee"
             "|fiancé|fiance|son|daughter|kid|child|cousin|aunt|uncle|grandmother|grandma|grandfather|grandpa"
             "|niece|nephew|friend|best\\s+friend|roommate|flatmate|housemate|boss|manager|colleague|coworker"
             "|co-worker|teammate|mentor|neighbou?r|therapist|dentist|doctor|landlord|dog|cat|pet|puppy|kitten"
             "|parrot|hamster|rabbit|horse|twin|stepmother|stepfather|stepsister|stepbrother|baby|cofounder"
             "|co-founder")
_RELATION = rf"(?P<rel>(?:(?:older|younger|little|big|baby|eldest|oldest|youngest|twin|best|new)\s+)?(?:{RELATIONS}))"
ATTRIBUTES = {"name", "first name", "last name", "surname", "middle name", "nickname", "birthday", "age",
              "hometown", "home town", "job", "job title", "title", "role", "occupation", "profession",
              "employer", "company", "team", "timezone", "time zone", "native language", "first language",
              "mother tongue", "major", "university", "school", "college", "blood type", "shoe size",
              "star sign", "zodiac sign", "car", "laptop", "phone", "editor", "shell", "browser",
              "operating system", "nationality", "department", "pronouns", "diet"}

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
    (r"(?:have\s+)?(?:just\s+|recently\s+)?moved", r"(?:has\s+)?(?:just\s+|recently\s+)?moved", "moved", "to", False),
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


def _facts(clause: str, role: str) -> list[Optional[Item]]:
    """The facts of one clause: about the user, a relation of theirs, or a named person."""
    if role == "user":
        if re.match(r"^I\s", clause, _I):
            return _verb_facts("user", clause[2:], _FIRST_VERBS) or _have(clause[2:], "user")
        mine = _my_facts(clause)
        if mine is not None:
            return mine
    return _named_facts(clause)


_INNER_ADV = re.compile(r"\b(?-i:[a-z]+ly|currently|still|also|already|now|just)\s+(?=(?:"
                        rf"{_VERB_WORDS}|from|in|at|for|to|living|working|studying|based|born|married|engaged"
                        r"|allergic|learning|moved|an?)\b)", _I)


def _verb_facts(subject: str, rest: str, patterns) -> list[Optional[Item]]:
    """The fact of the first verb pattern matching `rest`, and of any "... and <verb> ..." after it."""
    rest = _INNER_ADV.sub("", rest)
    for pattern, predicate, proper in patterns:
        found = pattern.match(rest)
        if not found:
            continue
        prep = found.group("prep") if "prep" in pattern.groupindex else None
        obj, end = _object_at(found.group("rest"), proper=proper or (prep or "").lower() in ("at", "for"))
        if obj is None:
            return []
        full = f"{predicate} {' '.join(prep.lower().split())}" if prep else predicate
        after = re.match(r"^[^,;]{0,30}?\s*,?\s*\band\s+(?P<next>.+)$", found.group("rest")[end:], _I)
        more = _verb_facts(subject, after.group("next"), patterns) if after else []
        return [_item("fact", subject=subject, predicate=full, object=obj)] + more
    return []


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


# -- decisions ---------------------------------------------------------------------------------

_WHO = r"(?:I|we|the\s+team|our\s+team)\s+(?:(?:have|had|finally|just|eventually|ultimately|all|both|already)\s+)*"
_DECISIONS = (  # (pattern, whether the verb belongs to the choice)
    (re.compile(rf"^{_WHO}decided\s+(?:to\s+|on\s+|that\s+(?:we|I)\s+(?:will|would|should|are\s+going\s+to"
                r"|am\s+going\s+to|must)\s+)(?P<choice>.+)$", _I), False),
    (re.compile(rf"^{_WHO}(?:decided\s+against|chose\s+not\s+to|decided\s+not\s+to)\s+(?P<choice>.+)$", _I), "not"),
    (re.compile(rf"^{_WHO}(?:(?:went|are\s+going|am\s+going|will\s+go|have\s+gone|decided\s+to\s+go)\s+with"
                r"|settled\s+on|chose|chosen|picked(?!\s+up\b)|selected|opted\s+for|agreed\s+(?:on|to)"
                r"|(?:are|am)\s+sticking\s+with|will\s+stick\s+with)\s+(?P<choice>.+)$", _I), False),
    (re.compile(rf"^{_WHO}(?:will|are\s+going\s+to|am\s+going\s+to)\s+(?P<choice>(?:use|adopt|switch\s+to"
                r"|migrate\s+to)\s+.+)$", _I), False),
    (re.compile(rf"^{_WHO}(?:are|am)\s+(?P<choice>(?:switching|migrating|moving)\s+to\s+.+)$", _I), "switching"),
    (re.compile(r"^(?:going|decided\s+to\s+go)\s+with\s+(?P<choice>.+)$", _I), False),
    (re.compile(r"^let\s+us\s+(?:go\s+with|stick\s+with|settle\s+on|pick|choose|opt\s+for)\s+(?P<choice>.+)$", _I),
     False),
    (re.compile(r"^let\s+us\s+(?P<choice>(?:use|switch\s+to|migrate\s+to|adopt)\s+.+)$", _I), False),
    (re.compile(r"^(?:the|our|my)\s+(?:final\s+)?decision\s+(?:is|was)\s*:?\s+(?:to\s+)?(?P<choice>.+)$", _I), False),
    (re.compile(r"^(?:final\s+)?(?:decision|decided)\s*:\s*(?:to\s+)?(?P<choice>.+)$", _I), False),
)
_REASON = re.compile(r"\s*,?\s+(?:because|since|due\s+to|given\s+that|so(?:\s+that)?)\s+|\s*,\s*as\s+|\s+[-—]\s+", _I)
_VAGUE_CHOICE = re.compile(r"^(?:not\s+)?(?:\w+(?:\s+(?:to|with|on|for))?\s+)?(?:it|that|this|them|one|so)$", _I)
_ALTERNATIVE = re.compile(r"\s+(?:over|instead\s+of|rather\s+than)\s+.*$", _I)


_LEAD_PHRASE = re.compile(r"^(?:[\w'-]+\s+){0,4}[\w'-]+,\s+")


def _decision(sentence: str) -> Optional[Item]:
    """A decision stated by the sentence, possibly after a short lead-in ("After a long debate, ...")."""
    sentence = sentence.rstrip(" .!")
    for clause in (sentence, _FILLER.sub("", sentence, count=1), _LEAD_PHRASE.sub("", sentence, count=1)):
        for pattern, prefix in _DECISIONS:
            found = pattern.match(clause)
            if found:
                return _decided(found.group("choice"), prefix)
    return None


_LIGHT_VERB = re.compile(r"^(?:to\s+)?(?:go\s+with|stick\s+with|settle\s+on|opt\s+for|pick|choose)\s+", _I)
_GERUNDS = {"switching": "switch", "migrating": "migrate", "moving": "move"}


def _decided(text: str, prefix) -> Optional[Item]:
    choice, _, reason = (part.strip(" ,.") for part in _split_once(_REASON, text))
    choice = _ALTERNATIVE.sub("", _LIGHT_VERB.sub("", re.sub(r"^to\s+", "", choice, flags=_I))).strip(" ,.")
    if _BAD_START.match(choice):
        return None
    if prefix == "switching":
        verb, _, rest = choice.partition(" ")
        choice = f"{_GERUNDS[verb.lower()]} {rest}"
    elif prefix:
        choice = f"{prefix} {choice}"
    if (not choice or len(choice.split()) > 14 or _VAGUE_CHOICE.match(choice)
            or _YOU.search(choice) or len(reason.split()) > 25):
        return None
    return _item("decision", choice=choice, reason=reason or None)


def _split_once(pattern: re.Pattern, text: str) -> tuple[str, str, str]:
    found = pattern.search(text)
    return (text[:found.start()], found.group(0), text[found.end():]) if found else (text, "", "")


# -- beliefs -----------------------------------------------------------------------------------

_DEGREE = r"(?:absolutely\s+|quite\s+|pretty\s+|fairly\s+|very\s+|completely\s+|totally\s+|100%\s+|really\s+)?"
_BELIEFS = (  # (pattern, polarity, confidence)
    (re.compile(r"^I\s+(?:do|really\s+do|did)\s+not\s+(?:really\s+)?(?:think|believe|reckon)\s+(?:that\s+)?"
                r"(?P<p>.+)$", _I), -1, 0.7),
    (re.compile(r"^I\s+am\s+not\s+(?:at\s+all\s+)?convinced\s+(?:that\s+)?(?P<p>.+)$", _I), -1, 0.6),
    (re.compile(rf"^I\s+am\s+(?P<deg>{_DEGREE})(?:sure|certain|convinced|confident|positive)\s+(?:that\s+)?"
                r"(?P<p>.+)$", _I), 1, 0.9),
    (re.compile(r"^I\s+(?:really\s+|honestly\s+|strongly\s+|genuinely\s+|do\s+|still\s+|also\s+|firmly\s+)*"
                r"(?:think|believe|feel\s+(?:that|like))\s+(?:that\s+)?(?P<p>.+)$", _I), 1, 0.7),
    (re.compile(r"^I\s+(?:reckon|suspect|guess|would\s+say|have\s+a\s+feeling)\s+(?:that\s+)?(?P<p>.+)$", _I), 1, 0.6),
    (re.compile(r"^I\s+(?:really\s+|seriously\s+|strongly\s+)?doubt\s+(?:that\s+)?(?P<p>.+)$", _I), -1, 0.6),
    (re.compile(r"^it\s+is\s+(?:very\s+|quite\s+|highly\s+)?(?P<how>likely|probable|possible|unlikely|certain)"
                r"\s+that\s+(?P<p>.+)$", _I), 1, None),
    (re.compile(r"^(?:as\s+far\s+as|from\s+what)\s+I\s+(?:know|can\s+tell)\s*,?\s+(?P<p>.+)$", _I), 1, 0.6),
    (re.compile(r"^(?:in\s+my\s+(?:honest\s+)?(?:opinion|view|experience)|imo|imho)\s*,?\s+(?P<p>.+)$", _I), 1, 0.7),
    (re.compile(r"^(?P<p>.+?),?\s+I\s+(?:think|believe)$", _I), 1, 0.7),
    (re.compile(r"^(?:maybe|perhaps|possibly)\s*,?\s+(?P<p>.+)$", _I), 1, 0.4),
    (re.compile(r"^probably\s*,?\s+(?P<p>.+)$", _I), 1, 0.6),
)
_LIKELIHOOD = {"likely": (1, 0.6), "probable": (1, 0.6), "possible": (1, 0.4), "unlikely": (-1, 0.6),
               "certain": (1, 0.9)}
_SUBJECT = r"(?P<s>(?:(?:the|this|that|our|my|their|his|her|its|a|an|some|all|most)\s+)?[\w'-]+(?:\s+[\w'-]+){0,3}?)"
_IN_HEDGE = (  # a hedge inside the proposition: (pattern, replacement, confidence)
    (re.compile(rf"^{_SUBJECT}\s+(?:is|are)\s+(?:very\s+|quite\s+|highly\s+)?likely\s+to\s+(?P<r>.+)$", _I),
     r"\g<s> will \g<r>", 0.6),
    (re.compile(rf"^{_SUBJECT}\s+(?:is|are)\s+(?:very\s+|quite\s+|highly\s+)?unlikely\s+to\s+(?P<r>.+)$", _I),
     r"\g<s> will not \g<r>", 0.6),
    (re.compile(rf"^{_SUBJECT}\s+(?:seems|seem|appears|appear)\s+to\s+be\s+(?P<r>.+)$", _I),
     r"\g<s> is \g<r>", 0.5),
    (re.compile(rf"^{_SUBJECT}\s+(?P<aux>is|are|was|were|will|would|has|have|should|can)\s+"
                r"(?:probably|likely|most\s+likely)\s+(?P<r>.+)$", _I), r"\g<s> \g<aux> \g<r>", 0.6),
    (re.compile(rf"^{_SUBJECT}\s+(?:probably|likely)\s+(?P<r>.+)$", _I), r"\g<s> \g<r>", 0.6),
    (re.compile(rf"^{_SUBJECT}\s+(?P<aux>is|are|was|were|will)\s+(?:definitely|certainly)\s+(?P<r>.+)$", _I),
     r"\g<s> \g<aux> \g<r>", 0.9),
    (re.compile(rf"^{_SUBJECT}\s+(?:might|may|could)\s+be\s+(?P<r>(?![\w-]+(?:ed|en)\b).+)$", _I),
     r"\g<s> is \g<r>", 0.4),
    (re.compile(rf"^{_SUBJECT}\s+(?:might|may)\s+(?P<r>.+)$", _I), r"\g<s> will \g<r>", 0.4),
)
_PRONOUN_SUBJECT = re.compile(r"^(?:(?:this|that|these|those|he|she|they|them|so|not|such)\b"
                              r"|(?:it|there)\b(?:\s+\S+){0,2}$)", _I)
_NOT = re.compile(r"\b(?P<aux>is|are|was|were|will|would|can|could|should|must|has|have|had)\s+not\b|\bcannot\b", _I)
_DO_NOT = re.compile(r"\b(?:do|does|did)\s+not\s+(?P<verb>[a-z]+)\b", _I)


def _beliefs(sentence: str) -> list[Optional[Item]]:
    clause = _FILLER.sub("", sentence.rstrip(" .!"), count=1)
    for pattern, polarity, confidence in _BELIEFS:
        found = pattern.match(clause)
        if found:
            if found.groupdict().get("deg", "").strip().lower() in ("pretty", "fairly", "quite"):
                confidence = 0.8
            if found.groupdict().get("how"):
                polarity, confidence = _LIKELIHOOD[found.group("how").lower()]
            return _belief(found.group("p"), polarity, confidence)
    return _belief(clause, 1, None)


def _belief(proposition: str, polarity: int, confidence: Optional[float]) -> list[Optional[Item]]:
    """A belief from a proposition, its own hedge ("is probably") and negation folded into the
    confidence and polarity; None-confidence means a hedge inside it is required."""
    proposition = _STOP_BELIEF.split(proposition, maxsplit=1)[0].strip(" ,.!")
    for pattern, replacement, hedge in _IN_HEDGE:
        if pattern.match(proposition):
            proposition = pattern.sub(replacement, proposition)
            confidence = hedge if confidence is None else min(confidence, hedge)
            break
    if confidence is None or not _believable(proposition):
        return []
    proposition, flipped = _affirmed(proposition)
    proposition = re.sub(r"\bmy\b", "user's", proposition, flags=_I)
    return [_item("belief", proposition=proposition, polarity=-polarity if flipped else polarity,
                  confidence=confidence)]


_STOP_BELIEF = re.compile(r",\s+(?:but|though|although|so)\b|\s+but\s+|;", _I)


def _believable(proposition: str) -> bool:
    words = proposition.split()
    return (3 <= len(words) <= 25 and not _PRONOUN_SUBJECT.match(proposition)
            and not re.search(r"\b(?:I|me)\b", proposition) and not _YOU.search(proposition)
            and not re.match(r"^(?:about|of|so|too|that)\b", proposition, _I) and not SECRETISH.search(proposition))


def _affirmed(proposition: str) -> tuple[str, bool]:
    """The proposition without its one simple negation, and whether it had one."""
    found = _NOT.search(proposition)
    if found:
        kept = found.group("aux") or "can"
        return proposition[:found.start()] + kept + proposition[found.end():], True
    found = _DO_NOT.search(proposition)
    if found:
        verb = found.group("verb")
        verb = _third_person(verb) if found.group(0).lower().startswith("does") else verb
        return proposition[:found.start()] + verb + proposition[found.end():], True
    return proposition, False


def _third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


# -- skills ------------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*(?:#+\s*)?(?:here\s+is\s+|here's\s+)?(?:(?:(?:the\s+)?steps\s+to|how\s+to|how\s+(?:I|we))"
                     r"\s+(?P<a>[^:?]{3,80}?)\s*[:\-–—]?|to\s+(?P<b>[^:?]{3,80}?)\s*:)\s*$", _I)
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•‣]|step\s+\d+\s*[:.)-])\s+(?P<step>\S.*)$", _I)
_INLINE = re.compile(r"^(?:here\s+is\s+|here's\s+)?(?:(?P<steps>(?:the\s+)?steps\s+to)|(?:the\s+)?way\s+to|how\s+to"
                     r"|how\s+(?:I|we)|to)"
                     r"\s+(?P<purpose>[^:,;]{3,80}?)\s*(?:\s(?:are|is)\s*:?|:|,)\s*(?P<body>.+)$", _I)
_NUMBERED = re.compile(r"(?:^|\s)\(?\d{1,2}[.)]\s+")
_SEQUENCE = re.compile(r"\s*[,;]?\s*\b(?:and\s+)?(?:then|next|finally|lastly|after\s+that|afterwards)\b\s*,?\s*", _I)
_STEP_LEAD = re.compile(r"^(?:first(?:ly)?|then|and|just|you\s+(?:need|have|should|must|can)\s+to|you\s+should"
                        r"|you\s+must|you)\b\s*,?\s*", _I)
_NOT_A_PURPOSE = re.compile(r"^(?:me|you|him|her|us|them|be|date|this|that|my|your|our|his|their|the|a|an|some"
                            r"|all|each|everyone|anyone|no|sum\s+up|summari[sz]e|recap|clarify|conclude)\b", _I)


def _skill_blocks(text: str) -> tuple[list[Optional[Item]], str]:
    """Skills written as a "how to X:" line followed by a numbered or bulleted list, and the
    text without those lines."""
    lines, items, kept, i = text.splitlines(), [], [], 0
    while i < len(lines):
        header = _HEADER.match(lines[i])
        steps, j = _list_after(lines, i + 1) if header else ([], i + 1)
        if header and len(steps) >= 2:
            items.append(_skill(header.group("a") or header.group("b"), steps))
            i = j
        else:
            kept.append(lines[i])
            i += 1
    return items, "\n".join(kept)


def _list_after(lines: list[str], start: int) -> tuple[list[str], int]:
    steps, i = [], start
    while i < len(lines) and not lines[i].strip() and not steps:
        i += 1
    while i < len(lines) and (found := _LIST_ITEM.match(lines[i])):
        steps.append(found.group("step"))
        i += 1
    return steps, i


def _inline_skill(sentence: str) -> Optional[Item]:
    found = _INLINE.match(sentence.rstrip(" ."))
    if not found:
        return None
    body = found.group("body")
    if len(_NUMBERED.findall(" " + body)) >= 2:
        parts = _NUMBERED.split(" " + body)
    elif _SEQUENCE.search(body) or re.match(r"^first\b", body, _I):
        parts = [p for chunk in _SEQUENCE.split(body) for p in re.split(r"[;,]", chunk)]
    elif ";" in body:
        parts = body.split(";")
    elif found.group("steps") or len(parts := re.split(r",\s*(?:and\s+)?", body)) >= 3:
        parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", body) if found.group("steps") else parts
    else:
        return None
    return _skill(found.group("purpose"), parts)


def _skill(purpose: str, parts: list[str]) -> Optional[Item]:
    purpose = " ".join(re.sub(r"^how\s+to\s+", "", purpose.strip(" .:"), flags=_I).split())
    steps = [step for step in (_step(p) for p in parts) if step]
    if (len(steps) < 2 or len(purpose.split()) > 10 or _NOT_A_PURPOSE.match(purpose)
            or re.search(r"\b(?:it|them|this|that|these|those)$", purpose, _I)
            or any(len(step.split()) > 25 for step in steps)):
        return None
    return _item("skill", purpose=purpose, steps=steps)


def _step(text: str) -> str:
    step = text.strip(" .;,")
    while (shorter := _STEP_LEAD.sub("", step, count=1)) != step:
        step = shorter
    first = step.split(" ", 1)[0]
    if first[:1].isupper() and first[1:].islower() and first != "I":
        step = step[:1].lower() + step[1:]
    return step.strip(" .;,")
