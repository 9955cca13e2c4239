"""The torch device perception runs on (``--device``): ``auto`` is CUDA when present, else the CPU.

The same rule as the CLIP baseline (:func:`clevr_poc.baselines.clip.clip_training.resolve_device`), with a
check: asking for a CUDA device on a machine without one is a one-line :class:`DeviceError`, not a torch
traceback deep inside the first forward pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clevr_poc.errors import ClevrPocError

if TYPE_CHECKING:
    import torch

#: ``--device`` values the command lines document (any torch device string is accepted).
DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda")
DEFAULT_DEVICE = "auto"


class DeviceError(ClevrPocError, ValueError):
    """An unknown device, or a CUDA device requested where torch sees none."""


def resolve_device(device: str | torch.device = DEFAULT_DEVICE) -> torch.device:
    """The ``torch.device`` of a device spec: ``"auto"`` -> ``cuda`` when ``torch.cuda.is_available()``,
    else ``cpu``; ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ... or a ``torch.device`` as given.

    Raises:
        DeviceError: not a device spec, or a CUDA device (or index) that this machine does not have.
    """
    import torch

    if isinstance(device, torch.device):
        spec = device
    else:
        if not isinstance(device, str) or not device.strip():
            raise DeviceError(f"--device: expected auto, cpu, cuda or cuda:N (got {device!r})")
        name = device.strip().lower()
        if name == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            spec = torch.device(name)
        except (RuntimeError, ValueError):
            raise DeviceError(f"--device: not a torch device: {device!r} (expected auto, cpu, cuda or cuda:N)") \
                from None
    if spec.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"--device {spec}: CUDA is not available on this machine (torch "
                              f"{torch.__version__}); use --device cpu or auto")
        if spec.index is not None and spec.index >= torch.cuda.device_count():
            raise DeviceError(f"--device {spec}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif spec.type != "cpu":
        if spec.type == "mps" and getattr(torch.backends, "mps", None) is not None \
                and torch.backends.mps.is_available():
            return spec
        raise DeviceError(f"--device {spec}: not available here (expected auto, cpu, cuda or cuda:N)")
    return spec
