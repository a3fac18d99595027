"""Budget parsing and the k each domain gets."""

from fractions import Fraction

import pytest

from capsel.errors import CapselError, OptionError
from capsel.selection.budget import domain_quotas, parse_budget


@pytest.mark.parametrize(
    ("text", "count", "percent"),
    [("800", 800, None), (" 1 ", 1, None), ("10%", None, Fraction(10)), ("2.5%", None, Fraction(5, 2)),
     ("100%", None, Fraction(100))],
)
def test_parse_accepts_counts_and_percentages(text, count, percent):
    budget = parse_budget(text)
    assert (budget.count, budget.percent, budget.mode) == (count, percent, "per_domain")


@pytest.mark.parametrize("text", ["0", "-5", "0%", "101%", "abc", "10.5", "%", "1e3", ""])
def test_parse_refuses_other_input_with_the_accepted_forms(text):
    with pytest.raises(CapselError, match="800|at least 1|\\(0, 100\\]"):
        parse_budget(text)


@pytest.mark.parametrize(
    ("text", "pool", "expected"),
    # hand-computed: percentages round half up
    [("10%", 80_000, 8_000), ("10%", 297, 30), ("10%", 294, 29), ("2.5%", 20, 1), ("2.5%", 19, 0),
     ("100%", 7, 7), ("30", 100, 30)],
)
def test_per_domain_quota(text, pool, expected):
    (quota,) = domain_quotas(parse_budget(text), {"math": pool})
    assert quota.k == expected and not quota.capped


def test_per_domain_count_above_pool_is_capped():
    quotas = {q.domain: q for q in domain_quotas(parse_budget("50"), {"a": 80, "b": 20})}
    assert (quotas["a"].k, quotas["a"].capped) == (50, False)
    assert (quotas["b"].k, quotas["b"].requested, quotas["b"].capped) == (20, 50, True)


@pytest.mark.parametrize(
    ("text", "sizes", "expected"),
    [
        # equal remainders go to domains in name order
        ("2", {"c": 1, "a": 1, "b": 1}, {"a": 1, "b": 1, "c": 0}),
        ("10", {"x": 5, "y": 5}, {"x": 5, "y": 5}),
        # 7 of 3+3+4: shares 2.1, 2.1, 2.8 -> floors 6, the extra one to z
        ("7", {"x": 3, "y": 3, "z": 4}, {"x": 2, "y": 2, "z": 3}),
        # 50% of 11 = 5.5 -> 6; shares 6·(6/11)=3.27, 6·(5/11)=2.73 -> floors 5, extra to b
        ("50%", {"a": 6, "b": 5}, {"a": 3, "b": 3}),
    ],
)
def test_total_split_by_largest_remainder(text, sizes, expected):
    quotas = domain_quotas(parse_budget(text, "total"), sizes)
    assert {q.domain: q.k for q in quotas} == expected


def test_total_above_pool_takes_every_domain_whole():
    quotas = domain_quotas(parse_budget("100", "total"), {"a": 30, "b": 10})
    assert {q.domain: q.k for q in quotas} == {"a": 30, "b": 10}
    assert all(q.capped for q in quotas)


@pytest.mark.parametrize("total", [1, 17, 64, 333, 640])
def test_total_split_properties(total):
    sizes = {"code": 197, "math": 297, "science": 147}
    quotas = domain_quotas(parse_budget(str(total), "total"), sizes)
    assert sum(q.k for q in quotas) == total
    pool = sum(sizes.values())
    for q in quotas:
        share = Fraction(total * sizes[q.domain], pool)
        assert share - 1 < q.k < share + 1


def test_a_count_beyond_int64_is_refused_up_front_and_the_largest_is_kept():
    # it used to pass here and crash in the manifest after the data was written
    for text in ("99999999999999999999999", str(2**63)):
        with pytest.raises(OptionError, match="at most 9,223,372,036,854,775,807 candidates.*100%"):
            parse_budget(text)
    assert parse_budget(str(2**63 - 1)).count == 2**63 - 1
