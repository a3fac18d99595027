"""The gate report page: one row per expectation from real GX results, every data string escaped, nothing loaded."""

from datetime import datetime, timezone
from html.parser import HTMLParser

import great_expectations as gx
import great_expectations.expectations as gxe
import orjson
import pandas as pd
import pytest

from capsel.quality.gate import ephemeral_context
from capsel.quality.gate_report import CSP, expectation_arguments, outcome_detail, write_gate_report

HOSTILE = "<script>alert(1)</script>"
QUOTES = "a&b'\""


class Page(HTMLParser):
    """The page's table rows as text cells, and every tag with its attributes."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: list[tuple[str, dict]] = []
        self._cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def examples(cell: str, count: int, of: int) -> list:
    """The failing rows a detail cell names, after checking their count."""
    prefix = f"{count} unexpected of {of}, e.g. "
    assert cell.startswith(prefix), cell
    return orjson.loads(cell[len(prefix):])


def validate(frame: pd.DataFrame, expectations: list):
    """Real GX suite results for `frame`, in the gate's own kind of context."""
    context = ephemeral_context()
    batch = context.data_sources.add_pandas("p").add_dataframe_asset("t").add_batch_definition_whole_dataframe("b")
    suite = context.suites.add(gx.ExpectationSuite(name="s", expectations=expectations))
    definition = gx.ValidationDefinition(name="v", data=batch, suite=suite)
    # as the gate asks: failing rows named by their id column
    return definition.run(batch_parameters={"dataframe": frame},
                          result_format={"result_format": "SUMMARY", "unexpected_index_column_names": ["id"]})


@pytest.fixture(scope="module")
def result():
    frame = pd.DataFrame({"id": ["c1", "c2", "c3", "c4"], "domain": ["code", HOSTILE, QUOTES, "code"], "n": [1, 2, 3, 4]})
    return validate(frame, [
        gxe.ExpectColumnValuesToBeInSet(column="domain", value_set=["code"]),
        gxe.ExpectTableRowCountToEqual(value=4),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=0, max_value=3),
    ])


def test_one_row_per_expectation_with_its_outcome(result, tmp_path):
    index = write_gate_report(tmp_path, "sel-1", "2026-11-25T00:00:00+00:00", {"domains": result})
    page = Page(index.read_text())
    header, *rows = page.rows
    assert header == ["#", "expectation", "arguments", "result", "observed / unexpected"]
    assert [row[1] for row in rows] == [
        "expect_column_values_to_be_in_set", "expect_table_row_count_to_equal", "expect_column_values_to_be_between",
    ]
    assert [row[2] for row in rows] == ["column='domain', value_set=['code']", "value=4",
                                        "column='n', min_value=0.0, max_value=3.0"]
    assert [row[3] for row in rows] == ["FAIL", "pass", "FAIL"]
    # the two domains outside the set, the row count, and the one n above 3, as the data holds them
    assert examples(rows[0][4], 2, 4) == [{"domain": HOSTILE, "id": "c2"}, {"domain": QUOTES, "id": "c3"}]
    assert rows[1][4] == "observed 4"
    assert examples(rows[2][4], 1, 4) == [{"n": 4, "id": "c4"}]
    text = index.read_text()
    assert "sel-1" in text and "3 evaluated, 1 passed, 2 failed" in text and ">failed<" in text


def test_validation_json_holds_the_gx_results_and_the_run(result, tmp_path):
    write_gate_report(tmp_path, "sel-1", "2026-11-25T00:00:00+00:00", {"domains": result})
    document = orjson.loads((tmp_path / "validation.json").read_bytes())
    assert document["run_name"] == "sel-1" and document["run_time"] == "2026-11-25T00:00:00+00:00"
    assert document["success"] is False
    assert document["tables"]["domains"] == orjson.loads(orjson.dumps(result.to_json_dict()))


def test_every_data_string_is_escaped_and_the_page_loads_nothing(result, tmp_path):
    run_name = "sel-<img src=x onerror=alert(1)>"
    text = write_gate_report(tmp_path, run_name, "t", {"<b>t</b>": result}).read_text()
    page = Page(text)
    assert {tag for tag, _ in page.tags} <= {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "span", "dl", "dt", "dd", "a",
        "table", "thead", "tbody", "tr", "th", "td", "code",
    }
    assert "<script" not in text.lower() and "<img" not in text.lower() and "<b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "&lt;b&gt;t&lt;/b&gt;" in text
    assert [attrs["href"] for tag, attrs in page.tags if tag == "a"] == ["validation.json"]
    assert not any("src" in attrs for _, attrs in page.tags)
    assert "http:" not in text and "https:" not in text and "url(" not in text
    csp = [attrs["content"] for tag, attrs in page.tags if attrs.get("http-equiv") == "Content-Security-Policy"]
    assert csp == [CSP] and "default-src 'none'" in CSP


def test_arguments_leave_out_the_batch_and_long_lists():
    kwargs = {"batch_id": "b", "column": "d", "value_set": list(range(9)), "column_list": list(range(8))}
    assert expectation_arguments(kwargs) == f"column='d', column_list={list(range(8))!r}"


@pytest.mark.parametrize(("outcome", "expected"), [
    ({"result": {}, "exception_info": {"raised_exception": True, "exception_message": "no column x"}},
     "error: no column x"),
    ({"result": {"unexpected_count": 7, "partial_unexpected_list": list(range(7)),
                 "partial_unexpected_index_list": [{"id": f"c{i}"} for i in range(7)]}},
     '7 unexpected, e.g. [{"id":"c0"},{"id":"c1"},{"id":"c2"},{"id":"c3"},{"id":"c4"}]'),
    ({"result": {"unexpected_count": 2, "partial_unexpected_list": ["x", None]}}, '2 unexpected, e.g. ["x",null]'),
    ({"result": {"element_count": 9, "unexpected_count": 1, "partial_unexpected_list": [3]}},
     "1 unexpected of 9, e.g. [3]"),
    ({"result": {"element_count": 9, "unexpected_count": 0, "partial_unexpected_list": []}}, "0 unexpected of 9"),
    ({"result": {"observed_value": 12}, "exception_info": {"raised_exception": False}}, "observed 12"),
])
def test_the_detail_names_errors_unexpected_rows_or_the_observed_value(outcome, expected):
    assert outcome_detail(outcome) == expected


def test_run_time_text_is_what_the_caller_gave(result, tmp_path):
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc).isoformat()
    text = write_gate_report(tmp_path, "s", when, {"t": result}).read_text()
    assert f"<dd>{when}</dd>" in text
