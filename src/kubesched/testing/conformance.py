"""The plugin conformance suite, for plugin authors: ``assert_conformant(factory, args)``.

The suite itself lives beside the plugin contract it checks
(:mod:`kubesched.framework.conformance`, which says what it checks); this module is its public
name in the test kit, so a plugin package's tests import everything they need from
:mod:`kubesched.testing`.
"""

from __future__ import annotations

from kubesched.framework.conformance import (
    assert_conformant,
    check_plugin,
    default_cluster,
    default_pods,
)

__all__ = ["assert_conformant", "check_plugin", "default_cluster", "default_pods"]
