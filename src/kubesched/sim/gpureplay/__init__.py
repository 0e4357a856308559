"""Replay of the Alibaba 2023 GPU trace under the FGD paper's protocol (``kubesched replay``):
``traces`` loads the CSV files, ``protocol`` orders the tasks and turns measurements into the
curve, ``replay`` runs one seed, ``runner`` several seeds and the JSON document."""
