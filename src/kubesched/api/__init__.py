"""The api room: the Kubernetes objects kubesched honours, parsed from real manifests.

Every input file is read here, once and strictly (:mod:`~kubesched.api.source`: size, depth and
repeated-key checks, msgspec's decoder; a large ``kubectl`` List read by parts in
:mod:`~kubesched.api.listitems`), and every object is parsed with field-path errors
(:mod:`~kubesched.api.parse`, :mod:`~kubesched.api.pods`, :mod:`~kubesched.api.fields`).
Quantities become exact integers (:mod:`~kubesched.api.quantity`), Pod requests are computed as
upstream computes them (:mod:`~kubesched.api.podresources`), DRA objects and their CEL selectors
live in :mod:`~kubesched.api.resource` and :mod:`~kubesched.api.cel`.

The bottom room: it imports nothing else of kubesched.
"""
