"""The mutation check's own rules (the slow run itself is `make mutation-check`).

Every mutation must still find its target in today's code, so renaming a role filter fails
`make test` at once instead of silently leaving the filter unchecked.
"""

from __future__ import annotations

import pytest

from scripts.mutation_check import MUTATIONS, REPO, Mutation, MutationError, check_all_apply, mutate


def test_every_mutation_finds_its_target_today() -> None:
    check_all_apply(REPO, MUTATIONS)
    assert len({m.name for m in MUTATIONS}) == len(MUTATIONS)


def test_a_constant_is_replaced_whatever_its_text() -> None:
    source = 'X = 1\nPREDICATE = (\n    "(c.roles_mask & %(role_bit)s) <> 0"\n)\n'
    mutation = Mutation("m", "f.py", "constant", "PREDICATE", '"(NOT " + ({original}) + ")"', "bug")
    out = mutate(source, mutation)
    namespace: dict = {}
    exec(compile(out, "f.py", "exec"), namespace)
    assert namespace["PREDICATE"] == "(NOT (c.roles_mask & %(role_bit)s) <> 0)"


def test_a_statement_is_prepended_after_the_docstring() -> None:
    source = 'class A:\n    def f(self, role):\n        """Doc."""\n        return role\n'
    out = mutate(source, Mutation("m", "f.py", "prepend", "A.f", 'role = "admin"', "bug"))
    namespace: dict = {}
    exec(compile(out, "f.py", "exec"), namespace)
    assert namespace["A"]().f("isg") == "admin"


@pytest.mark.parametrize(("source", "mutation", "message"), [
    ("Y = 1\n", Mutation("m", "f.py", "constant", "PREDICATE", '"TRUE"', "b"), "assigned 0 times"),
    ("P = 'a'\nP = 'b'\n", Mutation("m", "f.py", "constant", "P", '"TRUE"', "b"), "assigned 2 times"),
    ("def g():\n    pass\n", Mutation("m", "f.py", "prepend", "f", "return 1", "b"), "found 0 times"),
    ("a = 1\na = 1\n", Mutation("m", "f.py", "replace", "a = 1", "a = 2", "b"), "occurs 2 times"),
    ("P = 'TRUE'\n", Mutation("m", "f.py", "constant", "P", "{original}", "b"), "does not change"),
])
def test_a_missing_or_ambiguous_target_fails_loudly(source: str, mutation: Mutation, message: str) -> None:
    with pytest.raises(MutationError, match=message):
        mutate(source, mutation)
