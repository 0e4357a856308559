"""The Go text/template subset: rendering as Go would, refusing what it does not know."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.api.errors import InputError
from kubesched.bench import gotemplate as gt
from kubesched.bench.gofuncs import go_data

UPSTREAM = Path(__file__).parents[2] / "benchmarks/upstream-1.37/dra/templates"

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
        ("{{range 2}}{{break}}{{end}}", "unsupported action 'break'"),
        ("{{range 2}}x", "{{range}} without {{end}}"),
        ("{{$y}}", 'undefined variable "$y"'),
        ("{{range $i := 3}}{{end}}{{$i}}", 'undefined variable "$i"'),  # scoped to the range
        ("{{if true}}{{$j := 1}}{{end}}{{$j}}", 'undefined variable "$j"'),  # and the if
        ("{{$x = 1}}", 'undefined variable "$x"'),
        ("{{nil}}", "nil is not a command"),
        ("{{len .n}}", 'function "len" not defined'),
        ("{{if .Index}}x", "{{if}} without {{end}}"),
        ("x{{end}}", "unexpected {{end}}"),
        ("{{else}}", "unexpected {{else}}"),
        ("{{if .Index}}a{{else}}b{{else}}c{{end}}", "unexpected {{else}}"),
        ("{{if}}x{{end}}", "missing value for if"),
        ('{{printf "%d" .Index}}', 'function "printf" not defined'),
        ("{{.Index 1}}", "can't give argument to non-function"),
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
        ("{{or .Missing nil}}", "Go prints <no value>"),  # deviation: Go prints <no value>
        ("{{and .Missing 0}}", "unknown field .Missing"),
        ("{{range .Ratio}}x{{end}}", "range can't iterate over 0.5"),
        ("{{range $i, $e := 3}}x{{end}}", "can't use 3 to iterate over more than one variable"),
        ("{{range $i := 2}}{{.Index}}{{end}}", "can't evaluate field Index in type int"),
        ("{{ge 1.5 2}}", "incompatible types for comparison: float64 and int"),
        ("{{lt true false}}", "error calling lt: invalid type for comparison"),
        ("{{Int .Missing}}", "error calling Int: cannot cast <nil> to int"),
        ('{{Int "1.5"}}', "cannot cast 1.5 to int"),
        ("{{$x := 1}}{{$x.a}}", "can't evaluate field a in type int"),
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


# Go 1.26's text/template with upstream's function map, the data decoded as sigs.k8s.io/yaml
# decodes it (numbers float64) plus the ints Index 7 and Count 10: what each printed.
@pytest.mark.parametrize(
    ("text", "data", "want"),
    [
        ("{{$x := or .n 10}}{{$x}}", {}, "10"),
        ("{{$x := or .n 10}}{{$x}}", {"n": 3}, "3"),
        ("{{$x := or .n 10}}{{$x}}", {"n": None}, "10"),
        ("{{$x := or .n nil | JSON}}{{$x}}", {}, "null"),
        ("{{$x := (or .n nil) | JSON}}{{$x}}", {"n": None}, "null"),
        ("{{$x := (or .n nil) | JSON}}{{$x}}",
         {"n": [{"cel": {"expression": "a<b"}}, 1.5, 1e21, 1000000]},
         '[{"cel":{"expression":"a<b"}},1.5,1e+21,1000000]'),
        ("{{JSON .n}}", {"n": [1e-06, 1e-07, 1.2345678901234569e23, -0.0, 100.0, 1.5e300]},
         "[0.000001,1e-7,1.2345678901234569e+23,-0,100,1.5e+300]"),
        ("{{JSON .n}}", {"n": "a<b>&\u2028\n\"x"}, '"a<b>&\\u2028\\n\\"x"'),
        ("{{JSON .n}}", {"n": {"b": True, "a": None}}, '{"a":null,"b":true}'),
        ("{{.n}}", {"n": 1000000}, "1e+06"),  # a param is a float64
        ("{{.n}}", {"n": [1, "a", {"b": 2, "a": None}]}, "[1 a map[a:<nil> b:2]]"),
        ("{{.}}", {}, "map[Count:10 Index:7]"),
        ("{{$}}", {}, "map[Count:10 Index:7]"),
        ("{{range 3}}[{{.}}]{{end}}", {}, "[0][1][2]"),
        ("{{range $i := 3}}[{{$i}}{{.}}]{{end}}", {}, "[00][11][22]"),
        ("{{range 0}}x{{else}}none{{end}}", {}, "none"),
        ("{{range -2}}x{{else}}neg{{end}}", {}, "neg"),
        ("{{range .n}}[{{.}}]{{end}}", {"n": [1, 2]}, "[1][2]"),
        ("{{range $i, $e := .n}}[{{$i}}={{$e}}]{{end}}", {"n": ["a", "b"]}, "[0=a][1=b]"),
        ("{{range $k, $e := .n}}[{{$k}}={{$e}}]{{end}}", {"n": {"b": 1, "a": 2}}, "[a=2][b=1]"),
        ("{{range .missing}}x{{else}}e{{end}}", {}, "e"),
        ("{{range $i := 2}}{{$.Index}}{{end}}", {}, "77"),
        ("{{$x := 1}}{{if true}}{{$x = 2}}{{end}}{{$x}}", {}, "2"),
        ("{{$x := 1}}{{if true}}{{$x := 2}}{{$x}}{{end}}{{$x}}", {}, "21"),
        ("{{$x := 1}}{{range 2}}{{$x = .}}{{end}}{{$x}}", {}, "1"),
        ("{{$x := 1}}{{range 2}}{{$x = 5}}{{end}}{{$x}}", {}, "5"),
        ("{{$x := 1}}{{range $i := 2}}{{$x = $i}}{{end}}{{$x}}", {}, "1"),
        ("{{$x := 1}}{{$x := 2}}{{$x}}", {}, "2"),
        ("{{if $x := .n}}{{$x}}{{else}}{{$x}}{{end}}", {"n": 0}, "0"),
        ('{{or 0 "" 3 4}}', {}, "3"),
        ('{{or 0 ""}}', {}, ""),
        ("{{and 1 0 3}}", {}, "0"),
        ("{{and 1 2 3}}", {}, "3"),
        ("{{or .missing 0}}", {}, "0"),
        ("{{or 1 .missing.deep}}", {}, "1"),
        ("{{not .missing}}", {}, "true"),
        ("{{not 0}}", {}, "true"),
        ("{{$x := or .a .b}}{{$x}}", {"b": "q"}, "q"),
        ("{{ge 3 2}} {{ge 2 3}} {{lt 1 2}} {{le 2 2}} {{gt 2 2}} {{ne 1 2}}", {},
         "true false true true false true"),
        ('{{ge "b" "a"}}', {}, "true"),
        ("{{ge .n .m}}", {"n": 1, "m": 2}, "false"),
        ("{{Int .n}}", {"n": 2.7}, "2"),
        ("{{Int .n}}", {"n": "12"}, "12"),
        ("{{.n | Int}}", {"n": -2.7}, "-2"),
        ("{{$x := 3}}{{$x | Int}}", {}, "3"),
        ("{{$x := .n}}{{$x.a}}", {"n": {"a": 5}}, "5"),
        ("{{$.n.a}}", {"n": {"a": 5}}, "5"),
        ("{{range 2}}{{if ge . 1}}big{{else}}small{{end}}{{end}}", {}, "smallbig"),
        ("{{range 3}}{{Mod . 2}}{{end}}", {}, "010"),
        ("{{- $a := 1 -}}\n x", {}, "x"),
        ("{{(1)}} {{1 | Int}}", {}, "1 1"),
    ],
)  # fmt: skip
def test_renders_as_go_text_template(text: str, data: dict[str, object], want: str) -> None:
    assert gt.render(text, {**go_data(data), "Index": 7, "Count": 10}) == want


@pytest.mark.parametrize(
    ("text", "data"),
    [
        ("{{eq .n 3}}", {"n": 3}),  # incompatible types for comparison: float64 and int
        ("{{ge .n 2}}", {"n": 3}),
        ("{{range .n}}x{{end}}", {"n": 3}),  # range can't iterate over 3
    ],
)
def test_params_are_float64_as_upstream_decodes_them(text: str, data: dict[str, object]) -> None:
    gt.render(text, data)  # PyYAML's ints
    with pytest.raises(InputError):
        gt.render(text, go_data(data))


def test_upstream_dra_templates_render_as_go() -> None:
    """v1.37's ResourceClaimTemplate and list-attribute ResourceSlice, as Go rendered them."""
    claim = (UPSTREAM / "resourceclaimtemplate.yaml").read_text()
    out = gt.render(claim, {**go_data({"numRequests": 2, "selectors": None}), "Index": 0})
    assert out.startswith("\n\n\n\napiVersion: resource.k8s.io/v1\n")
    assert "      constraints: null\n      requests:\n      - name: req-0\n" in out
    assert out.endswith("- name: req-1\n        exactly:\n          deviceClassName: test-class\n"
                        "          selectors: null\n")  # fmt: skip
    sliced = (UPSTREAM / "resourceslice-list-attributes-devices.yaml").read_text()
    data = {"numDevices": 3, "numListValues": 1, "numNonMatchingDevices": 1, "sharedValue": "s"}
    devices = yaml.safe_load(gt.render(sliced, {**go_data(data), "Index": 7}))["spec"]["devices"]
    lists = [d["attributes"]["dra.example.com/match"]["strings"] for d in devices]
    assert lists == [["device-0-value-0"], ["s", "device-1-value-0"], ["s", "device-2-value-0"]]
