"""The Go text/template subset: rendering as Go would, refusing what it does not know."""

from __future__ import annotations

import pytest

from kubesched.api.errors import InputError
from kubesched.bench import gotemplate as gt

ENV = {"Index": 7, "Count": 10, "Zone": "z1", "Ratio": 0.5, "nested": {"key": 3}}


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("plain: text", "plain: text"),
        ("name: node-{{.Index}}", "name: node-7"),
        ("{{ .Count }}", "10"),
        ("{{.Zone}}-{{.nested.key}}", "z1-3"),
        ("{{AddInt .Index 1}}", "8"),
        ("{{AddInt .Index 1 2 3}}", "13"),
        ("{{AddInt}}", "0"),
        ("{{SubtractInt .Count .Index}}", "3"),
        ("{{MultiplyInt .Index 3}}", "21"),
        ("{{DivideInt .Count 3}}", "3"),
        ("{{DivideInt -7 2}}", "-3"),  # Go's int() truncates toward zero
        ("{{Mod .Index 3}}", "1"),
        ("{{Mod -7 3}}", "-1"),  # Go's % keeps the dividend's sign
        ("{{DivideFloat .Count 4}}", "2.5"),
        ("{{AddFloat .Ratio 1}}", "1.5"),
        ("{{MultiplyFloat 1000 1000}}", "1e+06"),  # %v of a float64
        ("{{MultiplyFloat 123456 1}}", "123456"),
        ("{{DivideFloat 1 100000}}", "1e-05"),
        ("{{SubtractFloat 3 1}}", "2"),
        ('{{AddInt "4" 1}}', "5"),  # toFloat64 parses numeric strings
        ("{{MultiplyInt (AddInt .Index 1) 2}}", "16"),
        ("{{.Index | AddInt 1}}", "8"),
        ("{{.Index | AddInt 1 | MultiplyInt 2}}", "16"),
        ("{{0x10}} {{1.0}} {{true}}", "16 1 true"),
        ("a {{- .Index -}} b", "a7b"),
        ("a\n  {{- .Index}}\n", "a7\n"),
        ("x{{/* a comment */}}y", "xy"),
        ("x {{- /* trimmed */ -}} y", "xy"),
        ('{{"}}"}}', "}}"),
    ],
)
def test_renders_like_go(text: str, want: str) -> None:
    assert gt.render(text, ENV) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{with .Index}}x{{end}}", "unsupported action 'with'"),
        ("{{if .Index}}x", "{{if}} without {{end}}"),
        ("x{{end}}", "unexpected {{end}}"),
        ("{{else}}", "unexpected {{else}}"),
        ("{{if .Index}}a{{else}}b{{else}}c{{end}}", "unexpected {{else}}"),
        ("{{if}}x{{end}}", "missing value for if"),
        ("{{range .Count}}{{end}}", "unsupported action 'range'"),
        ('{{printf "%d" .Index}}', 'function "printf" not defined'),
        ("{{$x := 1}}", "unsupported expression"),
        ("{{.Index 1}}", "can't give argument to non-function"),
        ("{{.}}", "the whole environment"),
        ("{{.Index | .Count}}", "only a function call can follow"),
        ("{{(AddInt 1}}", "unclosed left paren"),
        ("{{.Index", "unclosed action"),
        ("{{}}", "missing value"),
    ],
)
def test_rejects_what_it_does_not_know_at_parse_time(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        gt.parse("line one\n" + text, source="t.yaml")
    assert err.value.file == "t.yaml"
    path, msg = err.value.problems[0]
    assert path == "line 2"
    assert message in msg


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{.Missing}}", "unknown field .Missing"),
        ("{{.nested.other}}", "unknown field .nested.other"),
        ("{{Mod .Index 0}}", "integer divide by zero"),
        ("{{DivideFloat 1 0}}", "division by zero"),
        ("{{DivideInt 1}}", "wrong number of args for DivideInt: want 2 got 1"),
        ('{{AddInt "x" 1}}', "cannot cast x to float64"),
        ("{{AddInt true 1}}", "cannot cast true to float64"),
    ],
)
def test_rejects_bad_values_when_rendering(text: str, message: str) -> None:
    template = gt.parse(text, source="t.yaml")
    with pytest.raises(InputError) as err:
        template.render(ENV)
    assert message in str(err.value)
    assert "t.yaml" in str(err.value)


@pytest.mark.parametrize(
    ("text", "env", "want"),
    [
        ("{{if .priority}}{{AddInt 0 .priority}}{{else}}1000{{end}}", {"priority": 9}, "9"),
        ("{{if .priority}}{{AddInt 0 .priority}}{{else}}1000{{end}}", {}, "1000"),  # missing
        ("{{if .priority}}{{AddInt 0 .priority}}{{else}}1000{{end}}", {"priority": 0}, "1000"),
        ("{{if .mode}}set{{end}}!", {"mode": ""}, "!"),
        ("{{if .mode}}set{{end}}!", {"mode": "all"}, "set!"),
        ("{{if .xs}}y{{else}}n{{end}}", {"xs": []}, "n"),
        ("{{if .f}}y{{else}}n{{end}}", {"f": 0.0}, "n"),
        ('{{if eq .mode "single"}}single: {}{{else}}all: {}{{end}}', {"mode": "single"},
         "single: {}"),
        ('{{if eq .mode "single"}}single: {}{{else}}all: {}{{end}}', {"mode": "all"}, "all: {}"),
        ('{{if eq .mode "a"}}A{{else if eq .mode "b"}}B{{else}}C{{end}}', {"mode": "b"}, "B"),
        ('{{if eq .mode "a"}}A{{else if eq .mode "b"}}B{{else}}C{{end}}', {"mode": "z"}, "C"),
        ('{{eq .n 1 2 3}}', {"n": 3}, "true"),
        ("{{if .a}}{{if .b}}ab{{else}}a{{end}}{{end}}.", {"a": 1, "b": False}, "a."),
        ("x\n{{- if .a}}\n  k: v\n{{- end}}\ny", {"a": True}, "x\n  k: v\ny"),
    ],
)  # fmt: skip
def test_conditionals_choose_as_go_does(text: str, env: dict[str, object], want: str) -> None:
    assert gt.render(text, env) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{{if eq .mode "a"}}A{{end}}', "unknown field .mode"),  # Go: invalid type for comparison
        ('{{eq 1 "1"}}', "incompatible types for comparison"),
        ("{{eq 1}}", "missing argument for comparison"),
        ("{{if .priority}}{{end}}{{.priority}}", "unknown field .priority"),
    ],
)
def test_conditionals_refuse_what_go_refuses(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        gt.render(text, {})
    assert message in str(err.value)


def test_static_templates_are_recognised() -> None:
    assert gt.parse("a: b\n").static
    assert gt.parse("a: {{/* only a comment */}}b\n").static
    assert not gt.parse("a: {{.Index}}\n").static


@pytest.mark.parametrize(
    ("value", "want"),
    [(1.0, "1"), (-0.0, "-0"), (1234567.0, "1.234567e+06"), (0.0001, "0.0001"), (1e21, "1e+21"),
     (float("inf"), "+Inf"), (float("nan"), "NaN"), (True, "true"), (3, "3"), ("s", "s")],
)  # fmt: skip
def test_values_print_as_go_percent_v(value: object, want: str) -> None:
    assert gt.go_format(value) == want
