"""What a client may send a class, and the secrets it is given: checked here, before anything is stored.

A class code is 6 characters from 31 that cannot be misread (no 0/O, 1/I/L): 887 million codes, and joins are
rate-limited per client across replicas (rate_limit.py), so guessing a running class is hopeless. A teacher's key and a
student's token are 192 random bits each (secrets.token_urlsafe(24)); only their SHA-256 is stored.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata

from classroom.errors import ClassError
from classroom.models import CODE_LENGTH, NAME_MAX, NICKNAME_MAX, VALUE_MAX

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # 31 characters: no 0, 1, I, L, O
KEY_BYTES = 24  # 192 bits (the issue asks at least 128)
# characters a nickname may not hold: markup and CSV formulas are refused outright, though the pages render
# every nickname as text anyway (textContent) and the CSV quotes every cell
REFUSED_IN_NICKNAME = set("<>&\"'`=\\")


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_secret() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def code_from(text: str) -> str | None:
    """A typed code, forgiving case and spaces; None when it cannot be a class code (then no lookup is made)."""
    code = "".join(text.split()).upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        return None
    return code


def nickname_from(text: str) -> str:
    """The nickname as shown: NFC, spaces collapsed; refused when empty, too long, or holding markup or controls."""
    name = " ".join(unicodedata.normalize("NFC", text).split())
    if not name:
        raise ClassError(422, "nickname_empty", "Type a nickname to join (any name your class will know).")
    if len(name) > NICKNAME_MAX:
        raise ClassError(422, "nickname_too_long", f"A nickname is at most {NICKNAME_MAX} characters; this one has "
                                                   f"{len(name)}.", limit=NICKNAME_MAX, length=len(name))
    if any(c in REFUSED_IN_NICKNAME or unicodedata.category(c)[0] == "C" for c in name):
        raise ClassError(422, "nickname_characters", "A nickname may hold letters, digits, spaces and simple "
                                                     "punctuation, but no markup or formula characters "
                                                     "(< > & \" ' ` = \\).")
    return name


def answer_from(text: str) -> str:
    value = " ".join(unicodedata.normalize("NFC", text).split())
    if not value:
        raise ClassError(422, "answer_empty", "Pick or type an answer first.")
    if len(value) > VALUE_MAX or any(unicodedata.category(c)[0] == "C" for c in value):
        raise ClassError(422, "answer_too_long", f"An answer is at most {VALUE_MAX} characters of text.",
                         limit=VALUE_MAX)
    return value


def name_from(text: str, what: str) -> str:
    """A chapter's or a question's id as the teacher sends it (the questions module says whether it exists)."""
    if not text or len(text) > NAME_MAX or not all(c.isalnum() or c in "-_." for c in text):
        raise ClassError(422, f"invalid_{what}", f"That is not a {what} of the lessons.", field=what)
    return text
