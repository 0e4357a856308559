"""``python -m kubesched``: the same as the ``kubesched`` console script."""

from kubesched.cli import entry

entry()
