"""Gauss-Legendre nodes and weights in O(n) time and memory, for any number of nodes.

numpy's ``leggauss`` finds the nodes as eigenvalues of an n x n companion matrix: O(n**2)
memory and O(n**3) time (6,000 nodes take seconds, 10**5 do not fit). Up to
:data:`SMALL` nodes it is used as it is (the nodes Captum uses); above, each node and
weight comes from Bogaert's iteration-free asymptotic expansion (I. Bogaert, "Iteration-free
computation of Gauss-Legendre quadrature nodes and weights", SIAM J. Sci. Comput. 36(3),
A1008-A1026, 2014), accurate to double precision for n > 100, evaluated for all nodes at
once: node ``k`` is ``cos(theta_k)`` with ``theta_k`` a series in ``j_k / (n + 1/2)``,
``j_k`` the k-th zero of the Bessel function J0.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SMALL", "gauss_legendre"]

#: Up to this many nodes, numpy's ``leggauss`` (exact to rounding, O(n**2) memory).
SMALL = 100

#: The first zeros of J0 (the expansion below takes over past them).
_J0_ZEROS = np.array(
    [
        2.40482555769577276862163187933,
        5.52007811028631064959660411281,
        8.65372791291101221695419871266,
        11.7915344390142816137430449119,
        14.9309177084877859477625939974,
        18.0710639679109225431478829756,
        21.2116366298792589590783933505,
        24.3524715307493027370579447632,
        27.4934791320402547958772882346,
        30.6346064684319751175495789269,
        33.7758202135735686842385463467,
        36.9170983536640439797694930633,
    ]
)
#: J1 squared at the first zeros of J0.
_J1_SQUARED = np.array(
    [
        0.269514123941916926139021992911,
        0.115780138582203695807812836182,
        0.0736863511364082151406476811985,
        0.0540375731981162820417749182758,
        0.0426614290172430912655106063495,
        0.0352421034909961013587473033648,
        0.0300210701030546726750888157688,
        0.0261473914953080885904584675399,
        0.0231591218246913922652676382178,
        0.0207838291222678576039808057297,
        0.0188504506693176678161056800214,
        0.0172461575696650082995240053542,
        0.0158935181059235978027065594287,
    ]
)
# McMahon's expansion of the k-th zero of J0 in r = 1 / (pi (k - 1/4)), highest power first.
_ZERO_SERIES = [
    2092163573.0 / 82575360.0,
    -6277237.0 / 3440640.0,
    3779.0 / 15360.0,
    -31.0 / 384.0,
    0.125,
]
# J1(j_k)**2 in x = 1 / (k - 1/4), as a polynomial in x**2, highest power first.
_J1_SERIES = [
    0.433710719130746277915572905025e-3,
    -0.228969902772111653038747229723e-3,
    0.198924364245969295201137972743e-3,
    -0.303380429711290253026202643516e-3,
    0.0,
    0.202642367284675542887758926420,
]
# Bogaert's interpolants of the node (SF) and weight (WSF) corrections in theta**2.
_SF = (
    [
        -1.29052996274280508473467968379e-12,
        2.40724685864330121825976175184e-10,
        -3.13148654635992041468855740012e-8,
        0.275573168962061235623801563453e-5,
        -0.148809523713909147898955880165e-3,
        0.416666666665193394525296923981e-2,
        -0.416666666666662959639712457549e-1,
    ],
    [
        2.20639421781871003734786884322e-9,
        -7.53036771373769326811030753538e-8,
        0.161969259453836261731700382098e-5,
        -0.253300326008232025914059965302e-4,
        0.282116886057560434805998583817e-3,
        -0.209022248387852902722635654229e-2,
        0.815972221772932265640401128517e-2,
    ],
    [
        -2.97058225375526229899781956673e-8,
        5.55845330223796209655886325712e-7,
        -0.567797841356833081642185432056e-5,
        0.418498100329504574443885193835e-4,
        -0.251395293283965914823026348764e-3,
        0.128654198542845137196151147483e-2,
        -0.416012165620204364833694266818e-2,
    ],
)
_WSF = (
    [
        -2.20902861044616638398573427475e-14,
        2.30365726860377376873232578871e-12,
        -1.75257700735423807659851042318e-10,
        1.03756066927916795821098009353e-8,
        -4.63968647553221331251529631098e-7,
        0.149644593625028648361395938176e-4,
        -0.326278659594412170300449074873e-3,
        0.436507936507598105249726413120e-2,
        -0.305555555555553028279487898503e-1,
        0.833333333333333302184063103900e-1,
    ],
    [
        3.63117412152654783455929483029e-12,
        7.67643545069893130779501844323e-11,
        -7.12912857233642220650643150625e-9,
        2.11483880685947151466370130277e-7,
        -0.381817918680045468483009307090e-5,
        0.465969530694968391417927388162e-4,
        -0.407297185611335764191683161117e-3,
        0.268959435694729660779984493795e-2,
        -0.111111111111214923138249347172e-1,
    ],
    [
        2.01826791256703301806643264922e-9,
        -4.38647122520206649251063212545e-8,
        5.08898347288671653137451093208e-7,
        -0.397933316519135275712977531366e-5,
        0.200559326396458326778521795392e-4,
        -0.422888059282921161626339411388e-4,
        -0.105646050254076140548678457002e-3,
        -0.947969308958577323145923317955e-4,
        0.656966489926484797412985260842e-2,
    ],
)


def _bessel_j0_zeros(k: np.ndarray) -> np.ndarray:
    """The k-th positive zero of J0, for integers ``k >= 1``."""
    z = np.pi * (k - 0.25)
    r = 1.0 / z
    out = z + r * np.polyval(_ZERO_SERIES, r * r)
    small = k <= len(_J0_ZEROS)
    out[small] = _J0_ZEROS[k[small] - 1]
    return out


def _j1_squared(k: np.ndarray) -> np.ndarray:
    """J1 at the k-th zero of J0, squared."""
    x = 1.0 / (k - 0.25)
    out = x * np.polyval(_J1_SERIES, x * x)
    small = k <= len(_J1_SQUARED)
    out[small] = _J1_SQUARED[k[small] - 1]
    return out


def _half(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``cos(theta_k)`` and weights for k = 1 .. ceil(n/2) (from the node nearest 1)."""
    k = np.arange(1, (n + 1) // 2 + 1)
    w = 1.0 / (n + 0.5)
    nu = _bessel_j0_zeros(k)
    theta = w * nu
    x = theta * theta
    sf1, sf2, sf3 = (np.polyval(c, x) for c in _SF)
    wsf1, wsf2, wsf3 = (np.polyval(c, x) for c in _WSF)
    nu_over_sin = nu / np.sin(theta)
    b_nu_over_sin = _j1_squared(k) * nu_over_sin
    inv_sinc = w * w * nu_over_sin
    is2 = inv_sinc * inv_sinc
    theta = w * (nu + theta * inv_sinc * (sf1 + is2 * (sf2 + is2 * sf3)))
    denominator = b_nu_over_sin * (1.0 + is2 * (wsf1 + is2 * (wsf2 + is2 * wsf3)))
    return np.cos(theta), 2.0 * w / denominator


def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n``-point Gauss-Legendre rule on [-1, 1], nodes ascending.

    Parameters
    ----------
    n : int
        Number of nodes, at least 1.

    Returns
    -------
    nodes : ndarray of float64 of shape (n,)
    weights : ndarray of float64 of shape (n,)
        They sum to 2.
    """
    if n <= SMALL:
        return np.polynomial.legendre.leggauss(n)
    x, w = _half(n)
    skip = n % 2  # the middle node (0) appears once
    nodes = np.concatenate([-x, x[::-1][skip:]])
    weights = np.concatenate([w, w[::-1][skip:]])
    if skip:
        nodes[len(x) - 1] = 0.0
    return nodes, weights
