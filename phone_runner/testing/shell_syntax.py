"""The loopback shell's syntax: a command line cut into commands, each into words and operators.

The rules are the phone's ``sh`` ones that an adb ``shell:`` string meets (POSIX Shell Command
Language, 2.2 Quoting, 2.6 Word Expansions, 2.9.3 Lists): single quotes keep everything, double
quotes keep everything but ``\\``-escapes and ``$``-forms, a backslash quotes the next character,
and ``$?``, ``$VAR``, ``${VAR}`` and ``$(...)`` expand while the words are read. Expansion needs
the shell (its status, its variables, a subshell for ``$(...)``), so the caller passes those in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

OPS = (";", "&&", "||", "|", ">>", ">", "<", "&")


class ShellSyntaxError(ValueError):
    pass


@dataclass
class Word:
    text: str
    quoted: bool = False  # any part was quoted: no further splitting


def cut_command(rest: str) -> tuple[str, str, str]:
    """``(command, separator, remainder)``: ``rest`` cut at its first ``;``, newline, ``&&`` or ``||``
    outside quotes and ``$(...)``; the separator is "" when ``rest`` is one command."""
    cut, depth, q = len(rest), 0, ""
    i = 0
    while i < len(rest):
        c = rest[i]
        if q:
            if c == q:
                q = ""
            elif c == "\\" and q == '"':
                i += 1
        elif c in "'\"":
            q = c
        elif c == "\\":
            i += 1
        elif rest.startswith("$(", i):
            depth += 1
            i += 1
        elif c == ")" and depth:
            depth -= 1
        elif not depth and (rest.startswith("&&", i) or rest.startswith("||", i) or c in ";\n"):
            cut = i
            break
        i += 1
    sep = rest[cut : cut + (2 if rest.startswith(("&&", "||"), cut) else 1)]
    return rest[:cut], sep, rest[cut + len(sep):]


def tokenize(cmd: str, expand: Callable[[str], str], status: Callable[[], int],
             env: dict[str, str]) -> list[Word | str]:
    """Split into words (``Word``) and operators (``str``), expanding ``$``-forms like sh does.

    ``expand`` runs a ``$(...)`` body and returns its stdout, ``status`` gives ``$?``, ``env`` the
    variables (an unset one expands to "")."""
    return _Lexer(cmd, expand, status, env).read()


@dataclass
class _Lexer:
    """One pass over ``cmd``: ``i`` is the read position, ``cur`` the word being built."""

    cmd: str
    expand: Callable[[str], str]
    status: Callable[[], int]
    env: dict[str, str]
    i: int = 0
    out: list[Word | str] = field(default_factory=list)
    cur: list[str] = field(default_factory=list)
    quoted: bool = False
    started: bool = False  # a word has begun, even an empty one ('' is a word)

    def read(self) -> list[Word | str]:
        cmd = self.cmd
        while self.i < len(cmd):
            c = cmd[self.i]
            if c in " \t\n":
                self.flush()
                self.i += 1
            elif c == "'":
                self.single_quoted()
            elif c == '"':
                self.double_quoted()
            elif c == "\\":
                if self.i + 1 < len(cmd):
                    self.cur.append(cmd[self.i + 1])
                    self.started = self.quoted = True
                self.i += 2
            elif c == "$":
                self.cur.append(self.dollar())
                self.started = True
            elif c == "`":
                raise ShellSyntaxError("backquotes are not supported by the loopback shell")
            else:
                self.operator_or_char(c)
        self.flush()
        return self.out

    def flush(self) -> None:
        if self.started:
            self.out.append(Word("".join(self.cur), self.quoted))
        self.cur, self.quoted, self.started = [], False, False

    def single_quoted(self) -> None:
        end = self.cmd.find("'", self.i + 1)
        if end < 0:
            raise ShellSyntaxError("unterminated single quote")
        self.cur.append(self.cmd[self.i + 1 : end])
        self.quoted = self.started = True
        self.i = end + 1

    def double_quoted(self) -> None:
        cmd, n = self.cmd, len(self.cmd)
        self.i += 1
        self.quoted = self.started = True
        while True:
            if self.i >= n:
                raise ShellSyntaxError("unterminated double quote")
            c = cmd[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n and cmd[self.i + 1] in '"\\$`':
                self.cur.append(cmd[self.i + 1])
                self.i += 2
            elif c == "$":
                self.cur.append(self.dollar())
            else:  # a backslash before any other character stays (2.2.3)
                self.cur.append(c)
                self.i += 1

    def dollar(self) -> str:
        """The value of the ``$``-form at ``i``, moving ``i`` past it; a lone ``$`` is itself."""
        cmd, n, j = self.cmd, len(self.cmd), self.i
        if cmd.startswith("$(", j):
            depth, k = 1, j + 2
            while k < n and depth:
                depth += {"(": 1, ")": -1}.get(cmd[k], 0)
                k += 1
            if depth:
                raise ShellSyntaxError("unterminated $(")
            self.i = k
            return self.expand(cmd[j + 2 : k - 1]).rstrip("\n")  # 2.6.3: trailing newlines go
        if cmd.startswith("$?", j):
            self.i = j + 2
            return str(self.status())
        k = j + 1
        if k < n and cmd[k] == "{":
            end = cmd.index("}", k)  # unterminated: ValueError, which the shell reports like a syntax error
            self.i = end + 1
            return self.env.get(cmd[k + 1 : end], "")
        while k < n and (cmd[k].isalnum() or cmd[k] == "_"):
            k += 1
        self.i = k
        return "$" if k == j + 1 else self.env.get(cmd[j + 1 : k], "")

    def operator_or_char(self, c: str) -> None:
        op = next((o for o in OPS if self.cmd.startswith(o, self.i)), None)
        if op is None:
            self.cur.append(c)
            self.started = True
            self.i += 1
            return
        self.i += len(op)
        if op in (">", ">>") and self.started and not self.quoted and "".join(self.cur) in ("1", "2"):
            op = "".join(self.cur) + op  # 2> / 1>: the digit belongs to the operator
            self.cur, self.started = [], False
        self.flush()
        self.out.append(op)
        if op.endswith(">") and self.cmd.startswith("&", self.i):  # >&N duplicates a descriptor: one word
            j = self.i + 1
            while j < len(self.cmd) and self.cmd[j].isdigit():
                j += 1
            self.out.append(Word(self.cmd[self.i : j], False))
            self.i = j
