"""The config room: ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``).

Decoded (:mod:`~kubesched.config.decode`), defaulted as upstream defaults it
(:mod:`~kubesched.config.defaults`), validated with a field path on every error
(:mod:`~kubesched.config.validate`), with typed per-plugin args
(:mod:`~kubesched.config.args`, :mod:`~kubesched.config.pluginargs`) and extenders
(:mod:`~kubesched.config.extenders`); :mod:`~kubesched.config.load` is the entry point.
Every plugin name is a constant of :mod:`~kubesched.config.names`, which the other rooms use
instead of string literals.  The Kubernetes release a run models
(:mod:`~kubesched.config.versions`) and its feature gates
(:mod:`~kubesched.config.featuregates`, over the generated table
:mod:`~kubesched.config.featuregates_data`) choose the default profile.

Imports only ``api``.
"""
