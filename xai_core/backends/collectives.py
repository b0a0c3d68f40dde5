"""Collectives on a torus of chips: the closed-form cost of ring all-reduce and all-gather.

A data-parallel step ends with an **all-reduce** of the gradients: every device holds its
partial sum of ``B`` bytes and all must end with the total. On a ring of ``n`` devices the
bandwidth-optimal algorithm is a reduce-scatter (``n - 1`` steps, each device sending
``B / n`` bytes per step to its neighbour and adding what it receives) followed by an
all-gather (``n - 1`` more steps). On a torus the multi-dimensional ("2-D ring") version
runs the reduce-scatter along each dimension in turn on what is left (``B``, then
``B / d_1``, then ``B / (d_1 d_2)`` ...) and the all-gathers in reverse order.

With links of ``beta`` bytes per second each way and ``alpha`` seconds per ring step:

- dimension ``i`` of ``d_i`` chips, carrying ``B_i = B / (d_1 ... d_{i-1})`` bytes, costs
  ``(d_i - 1) * alpha + (d_i - 1) / d_i * B_i / (r_i * beta)`` for its reduce-scatter and
  the same for its all-gather, where ``r_i`` is the number of rings run at once: 2 with
  wraparound links (one ring each way round) or on a 2-chip dimension (a full-duplex
  link), 1 on a mesh line (the ring goes out and comes back on the same links);
- the bytes each link carries one way, per phase, are ``(d_i - 1) / d_i * B_i / r_i``.

TensorCores sharing a chip (v2, v3: two) first reduce through the chip's memory
(``B`` bytes read and written at the HBM bandwidth) and broadcast the result back the
same way. This is the textbook model (Patarasuk and Yuan, J. Parallel Distrib. Comput.
2009; the 2-D ring of Ying et al., "Image Classification at Supercomputer Scale", 2018,
on TPU v3 pods); no overlap with computation is assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from xai_core.errors import ValidationError

__all__ = ["CollectiveCost", "all_gather_cost", "all_reduce_cost"]


@dataclass(frozen=True)
class CollectiveCost:
    """What one collective costs. Built by :func:`all_reduce_cost` and :func:`all_gather_cost`.

    Attributes
    ----------
    seconds : float
        Latency terms plus bandwidth terms.
    latency_seconds, bandwidth_seconds : float
        The two parts: ``alpha`` per ring step, and bytes over link bandwidth.
    steps : int
        Ring steps in sequence.
    link_bytes : float
        Bytes one link carries in one direction over the whole collective.
    on_chip_seconds : float
        Time of the reduction between the TensorCores of a chip (0 with one per device).
    """

    seconds: float
    latency_seconds: float
    bandwidth_seconds: float
    steps: int
    link_bytes: float
    on_chip_seconds: float


def _check(nbytes: float, dims: tuple[int, ...], wrap: tuple[bool, ...]) -> None:
    if not isinstance(nbytes, (int, float)) or nbytes < 0:
        raise ValidationError(f"nbytes must be a number >= 0; got {nbytes!r}.")
    if not dims or any(int(d) < 1 for d in dims) or len(wrap) != len(dims):
        raise ValidationError(
            f"dims must be torus dimensions >= 1 with one wraparound flag each; got {dims} "
            f"and {wrap}."
        )


def _rings(d: int, wrap: bool) -> int:
    return 2 if (wrap or d == 2) else 1


def _phases(nbytes, dims, wrap, link_gbps, latency_us):
    """(latency s, bandwidth s, steps, link bytes) of one reduce-scatter over every dimension."""
    beta = link_gbps * 1e9 / 8  # bytes per second, one direction
    alpha = latency_us * 1e-6
    lat = bw = link = 0.0
    steps = 0
    part = float(nbytes)
    for d, w in zip(dims, wrap):
        d = int(d)
        if d > 1:
            moved = (d - 1) / d * part / _rings(d, w)
            lat += (d - 1) * alpha
            bw += moved / beta
            link += moved
            steps += d - 1
            part /= d
    return lat, bw, steps, link


def all_reduce_cost(
    nbytes: float,
    dims: tuple[int, ...],
    wrap: tuple[bool, ...],
    *,
    link_gbps: float,
    latency_us: float = 1.0,
    cores_per_device: int = 1,
    memory_gbps: float | None = None,
) -> CollectiveCost:
    """Closed-form cost of an all-reduce of ``nbytes`` over a torus (the module's model).

    Parameters
    ----------
    nbytes : float
        Bytes every device holds (the gradient of the whole network).
    dims : tuple of int
        Chips along each torus dimension.
    wrap : tuple of bool
        Whether each dimension has wraparound links.
    link_gbps : float
        Gbit/s of one link in one direction.
    latency_us : float, default=1.0
        Microseconds per ring step.
    cores_per_device : int, default=1
        Data-parallel devices per chip that reduce through the chip's memory first (2 for
        the TensorCores of a v2 or v3 chip).
    memory_gbps : float, optional
        GB/s of that memory; required when ``cores_per_device > 1``.

    Returns
    -------
    CollectiveCost
    """
    _check(nbytes, dims, wrap)
    lat, bw, steps, link = _phases(nbytes, dims, wrap, link_gbps, latency_us)
    on_chip = 0.0
    if cores_per_device > 1:
        if not memory_gbps:
            raise ValidationError("memory_gbps is needed to reduce between cores of a chip.")
        on_chip = 2 * 2 * nbytes / (memory_gbps * 1e9)  # read + write, reduce and broadcast
    return CollectiveCost(
        seconds=2 * (lat + bw) + on_chip,
        latency_seconds=2 * lat,
        bandwidth_seconds=2 * bw,
        steps=2 * steps,
        link_bytes=2 * link,
        on_chip_seconds=on_chip,
    )


def all_gather_cost(
    nbytes: float,
    dims: tuple[int, ...],
    wrap: tuple[bool, ...],
    *,
    link_gbps: float,
    latency_us: float = 1.0,
) -> CollectiveCost:
    """Closed-form cost of gathering ``nbytes`` in total (each device holding its share) to all.

    The all-gather half of :func:`all_reduce_cost`: ``(d_i - 1)`` steps per dimension and
    ``(d_i - 1) / d_i`` of what is gathered along it over each link.
    """
    _check(nbytes, dims, wrap)
    lat, bw, steps, link = _phases(nbytes, dims, wrap, link_gbps, latency_us)
    return CollectiveCost(
        seconds=lat + bw,
        latency_seconds=lat,
        bandwidth_seconds=bw,
        steps=steps,
        link_bytes=link,
        on_chip_seconds=0.0,
    )
