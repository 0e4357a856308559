"""Upstream-style field errors and name checks, for configuration and object validation.

Messages follow ``k8s.io/apimachinery/pkg/util/validation/field.Error.ErrorBody`` (``Invalid
value: 101: not in valid range [0-100]``, ``Required value``, ``Duplicate value: "x"``, ...), and
the name checks follow ``k8s.io/apimachinery/pkg/util/validation`` (``IsQualifiedName``,
``IsValidLabelValue``, ``IsDNS1123Subdomain``), messages included.  A problem is a
``(field_path, message)`` pair as :class:`kubesched.api.errors.InputError` takes them.
"""

from __future__ import annotations

import json
import re
from typing import Any

Problem = tuple[str, str]
"""``(field_path, message)``, e.g. ``("profiles[0].parallelism", "Invalid value: 0: ...")``."""

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class Verbatim(str):
    """A value printed as is (upstream's ``fmt.Stringer`` values, e.g. durations)."""

    __slots__ = ()


def go_duration(seconds: float) -> Verbatim:
    """Go ``time.Duration.String()`` of ``seconds``: ``15s``, ``1m30s``, ``1h0m0s``, ``500ms``."""
    ns = round(seconds * 1e9)
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns == 0:
        return Verbatim("0s")
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return Verbatim(f"{sign}{_trim(ns / size)}{unit}")
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{_trim(rest / 1e9)}s"
    if hours:
        text = f"{hours}h{minutes}m{text}"
    elif minutes:
        text = f"{minutes}m{text}"
    return Verbatim(sign + text)


def _trim(x: float) -> str:
    return f"{x:.9f}".rstrip("0").rstrip(".")


def go_value(value: Any) -> str:
    """A bad value as upstream prints it: strings quoted, numbers and bools plain, else JSON."""
    if value is None:
        return "null"
    if isinstance(value, Verbatim):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)


def join(path: str, child: str) -> str:
    """``path.child`` (or ``child`` alone at the root)."""
    return f"{path}.{child}" if path else child


def index(path: str, i: int) -> str:
    """``path[i]``."""
    return f"{path}[{i}]"


def invalid(path: str, value: Any, detail: str) -> Problem:
    """``field.Invalid``."""
    return path, f"Invalid value: {go_value(value)}: {detail}"


def required(path: str, detail: str = "") -> Problem:
    """``field.Required``."""
    return path, "Required value" + (f": {detail}" if detail else "")


def duplicate(path: str, value: Any) -> Problem:
    """``field.Duplicate``."""
    return path, f"Duplicate value: {go_value(value)}"


def forbidden(path: str, detail: str) -> Problem:
    """``field.Forbidden``."""
    return path, f"Forbidden: {detail}"


def not_supported(path: str, value: Any, supported: tuple[str, ...] | list[str] = ()) -> Problem:
    """``field.NotSupported``: ``Unsupported value: "x": supported values: "a", "b"``."""
    msg = f"Unsupported value: {go_value(value)}"
    if supported:
        msg += ": supported values: " + ", ".join(go_value(s) for s in supported)
    return path, msg


def unknown_field(path: str) -> Problem:
    """A key that the strict decoder does not know (upstream: ``unknown field "..."``)."""
    return path, "unknown field"


# --- names (k8s.io/apimachinery/pkg/util/validation) ---------------------------------------

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(f"^{_QNAME_FMT}$")
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_QNAME_FMT})?"
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def dns1123_label_errors(value: str) -> list[str]:
    """Upstream ``IsDNS1123Label``: empty list when valid (a valid subdomain with dots gets
    ``must not contain dots``)."""
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _DNS1123_LABEL_RE.match(value):
        if _DNS1123_SUBDOMAIN_RE.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Upstream ``IsDNS1123Subdomain``: empty list when valid."""
    errs = []
    if len(value) > 253:
        errs.append(_max_len(253))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """Upstream ``IsQualifiedName`` (label keys, resource names): empty list when valid."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if not _QNAME_RE.match(name):
        errs.append(
            "name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """Upstream ``IsValidLabelValue``: empty list when valid."""
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


def validate_label_name(path: str, value: str) -> list[Problem]:
    """Upstream ``metav1validation.ValidateLabelName``: one Invalid per message."""
    return [invalid(path, value, m) for m in qualified_name_errors(value)]


def is_extended_resource_name(name: str) -> bool:
    """Upstream ``IsExtendedResourceName``: a prefixed name outside ``kubernetes.io/``."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)
