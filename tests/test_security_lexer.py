"""The ASP lexer reads comments, strings and directives exactly as clingo does (differential tests
against clingo's own parser), so no check built on it can be fooled by clingo's comment rules."""

from __future__ import annotations

import random

import clingo.ast as clingo_ast
import pytest

from clevr_poc.asp_lexer import lex

MARKER = "included_marker_fact"


@pytest.fixture(scope="module")
def include_target(tmp_path_factory):
    """A file holding one marker fact: clingo's parser reads it when it executes an ``#include``."""
    path = tmp_path_factory.mktemp("lexer") / "included.lp"
    path.write_text(f"{MARKER}.\n", encoding="utf-8")
    return path.as_posix()


def clingo_view(text: str) -> tuple[bool, list[str], list[str]]:
    """``(parsed without error, comment texts, other statements)`` as clingo's parser reports them."""
    statements: list = []
    try:
        clingo_ast.parse_string(text, statements.append, logger=lambda code, message: None)
        ok = True
    except RuntimeError:
        ok = False
    comments = [str(s) for s in statements if s.ast_type == clingo_ast.ASTType.Comment]
    others = [str(s) for s in statements if s.ast_type != clingo_ast.ASTType.Comment]
    return ok, comments, others


def has_comment_nodes() -> bool:
    return bool(clingo_view("% c\nx.")[1])


def test_clingo_runs_include_while_parsing(include_target):
    """The premise of the checks: clingo's parser (not only grounding) opens ``#include``d files."""
    _, _, statements = clingo_view(f'#include "{include_target}".')
    assert f"{MARKER}." in statements


@pytest.mark.parametrize("text, code, comments", [
    ("%* %* *% x. *% y.", ["y", "."], ["%* %* *% x. *%"]),                  # block comments nest
    ("%* % *% x.\n *% y.", ["y", "."], ["%* % *% x.\n *%"]),                # % in a block: a line comment
    ("% %* \n x.", ["x", "."], ["% %* "]),                                   # %* in a line comment: nothing
    ("#! shebang\nx.", ["x", "."], ["#! shebang"]),                          # #! starts a line comment
    ("a.\r% c\r b.", ["a", "."], ["% c\r b."]),                              # \r does not end a line
    ('p("a\\"b%"). q.', ["p", "(", '"a\\"b%"', ")", ".", "q", "."], []),     # escapes; % inside a string
    ('%* %* *% "\\\n*% #include "f".', ["#include", '"f"', "."], ['%* %* *% "\\\n*%']),  # issue 14, defect 1
    ("#script (python) %* #end. y.", ["#script (python) %* #end", ".", "y", "."], []),  # no comments in code
])
def test_known_cases(text, code, comments):
    lexed = lex(text)
    assert [t.text for t in lexed.tokens] == code
    assert [text[a:b] for a, b in lexed.comments] == comments
    if has_comment_nodes() and clingo_view(text)[0]:
        assert clingo_view(text)[1] == comments


@pytest.mark.parametrize("text, kind, detail", [
    ('p("a\nb").', "error", '"'),          # a string cannot span lines: clingo reads on inside it
    ('p("a\\tb").', "error", '"'),         # \t is no escape
    ("p(é).", "error", "é"),
    ("x. %* a %* b *% c", "error", ""),    # unclosed (nested) block comment
    ("#foo. x.", "error", "#foo"),
    ("#includes x.", "error", "#includes"),
    ("$x.", "error", "$"),                 # clingo 5.8 dropped the $ operators
])
def test_lexer_errors_where_clingo_reports_one(text, kind, detail):
    errors = [t for t in lex(text).tokens if t.kind == "error"]
    assert errors and errors[0].text == detail
    messages: list[str] = []
    try:
        clingo_ast.parse_string(text.replace("é", "e\x01") if not text.isascii() else text, lambda s: None,
                                logger=lambda code, message: messages.append(message))
    except RuntimeError:
        pass
    assert any("lexer error" in m for m in messages)


FRAGMENTS = ["%", "%*", "*%", "*", '"', "\\", "\n", "\r", " ", "\t", "x", "p(1).", "a.", "#!", "#script (python)",
             "#script(lua) ", "#end", ".", '\\"', "\\n", "q", "#show p/1.", "%**%", "(", ")", "#inc", "lude", ":-",
             "#count", "'", "_", "X", "0x1", "01", "#foo", "!", "$", "..", "INCLUDE"]


def random_texts(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 14)))


@pytest.mark.parametrize("seed", range(3))
def test_differential_against_clingo(seed, include_target):
    """On 1,500 random texts of comment, string and directive fragments per seed:

    - whenever clingo executes an ``#include``, the lexer shows an ``#include`` directive token;
    - whenever clingo reports a lexer error, the lexer has an error token, and conversely;
    - when clingo parses the text, the lexer's comments are clingo's ``Comment`` statements, and the
      text with the lexer's comments blanked out parses to the same statements and no comment.
    """
    include = f'#include "{include_target}".'
    comment_nodes = has_comment_nodes()
    for text in random_texts(seed, 1500):
        text = text.replace("INCLUDE", include)
        ok, comments, statements = clingo_view(text)
        lexed = lex(text)
        ours_include = any(t.kind == "directive" and t.text == "#include" for t in lexed.tokens)
        if any(MARKER in s for s in statements):
            assert ours_include, text
        messages: list[str] = []
        try:
            clingo_ast.parse_string(text, lambda s: None, logger=lambda code, message: messages.append(message))
        except RuntimeError:
            pass
        clingo_lexer_error = any("lexer error" in m for m in messages)
        assert clingo_lexer_error == any(t.kind == "error" for t in lexed.tokens), text
        if ok:
            if comment_nodes:
                assert [text[a:b] for a, b in lexed.comments] == comments, text
            ok_again, comments_again, statements_again = clingo_view(lexed.code_only())
            assert ok_again and not comments_again and statements_again == statements, text


def test_sanitizer_fast_path_reads_the_tokens_clingo_reads():
    """Where the sanitizer's one-regex fast path applies, its tokens are the lexer's (so clingo's)."""
    from clevr_poc.queries.sanitizer import _FAST_GUARD, _FAST_TOKEN

    rng = random.Random(7)
    alphabet = list("abXY_' 019(),.:-!=<>%#\"\n\r\t;é")
    checked = 0
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        matches = _FAST_TOKEN.findall(text)
        if sum(map(len, matches)) != len(text) or _FAST_GUARD.search(text):
            continue
        lexed = lex(text)
        assert [t for t in matches if not t[0].isspace()] == [t.text for t in lexed.tokens], text
        assert not lexed.comments and all(t.kind in ("identifier", "variable", "number", "punct") for t in lexed.tokens)
        checked += 1
    assert checked > 1000


def test_lines_and_columns_count_only_newlines():
    token = lex("a.\r\n%* x\n *% b.").tokens[2]
    assert (token.text, token.line, token.column) == ("b", 3, 5)
