"""The reference family equals Captum's on the same imported network: InputXGradient,
DeepLift, DeepLiftShap, GradientShap (fed the same draws) and LRP (epsilon, alpha1-beta0)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
captum_attr = pytest.importorskip("captum.attr")

import xai_core as xai  # noqa: E402
import xai_ig  # noqa: E402
from xai_core.errors import CapabilityError, ValidationError  # noqa: E402

TOL = {"float64": 1e-10, "float32": 1e-5}
TARGET = np.array([0, 3, 1, 4])


class Plus0(torch.nn.Module):
    """``x + 0``: a new tensor between two nonlinear modules (see ``test_deeplift_adjacent``)."""

    def forward(self, x):
        return x + 0


class Net(torch.nn.Module):
    """Convolutions, ReLU, max and average pooling, tanh, sigmoid and dense layers; with
    ``split``, a ``Plus0`` after every nonlinear module another one reads directly."""

    def __init__(self, head: str = "sigmoid", pool: str = "max", split: bool = False):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.relu1 = torch.nn.ReLU()
        self.pool = torch.nn.MaxPool2d(2) if pool == "max" else torch.nn.AvgPool2d(2)
        self.conv2 = torch.nn.Conv2d(4, 6, 3)
        self.act2 = torch.nn.Tanh()
        self.fc1 = torch.nn.Linear(6 * 3 * 3, 8)
        self.act3 = torch.nn.Sigmoid() if head == "sigmoid" else torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(8, 5)
        self.split = Plus0() if split else torch.nn.Identity()

    def forward(self, x):
        x = self.split(self.relu1(self.conv1(x)))
        x = self.act2(self.conv2(self.pool(x)))
        x = self.act3(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def _setup(dtype: str, **kw):
    """The torch module, its imported network, the backend and inputs, in ``dtype``."""
    module = Net(**kw).eval()
    X = torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(1))
    net = xai.from_torch(module, X, dtype=dtype)
    if dtype == "float64":
        module, X = module.double(), X.double()
    return module, net, xai.get_backend("cpu", dtype=dtype), X


def _captum(cls, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(*args).attribute(**kw).detach().numpy()


def _baselines(X: torch.Tensor, k: int, seed: int = 2) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return 0.5 * torch.randn(k, *X.shape[1:], generator=g, dtype=X.dtype)


@pytest.fixture(params=["float64", "float32"])
def dtype(request):
    return request.param


@pytest.mark.parametrize("method", ["input_x_gradient", "gradient_x_input"])
def test_input_x_gradient_equals_captum(dtype, method):
    """Captum's name and this project's give Captum's InputXGradient."""
    module, net, backend, X = _setup(dtype)
    e = xai.explain(net, X.numpy(), method=method, backend=backend, target=TARGET)
    ref = _captum(captum_attr.InputXGradient, module, inputs=X, target=torch.tensor(TARGET))
    np.testing.assert_allclose(e.values, ref, atol=TOL[dtype])


@pytest.mark.parametrize("pool", ["max", "avg"])
@pytest.mark.parametrize("baselines", ["zeros", "number", "one", "per_row"])
def test_deeplift_equals_captum(dtype, pool, baselines):
    """Rescale multipliers through ReLU, tanh, sigmoid and max / average pooling."""
    module, net, backend, X = _setup(dtype, pool=pool, split=True)
    B = {
        "zeros": torch.zeros_like(X),
        "number": torch.full_like(X, 0.25),
        "one": _baselines(X, 1).expand_as(X),
        "per_row": _baselines(X, 4),
    }[baselines]
    ours = {"zeros": "zeros", "number": 0.25, "one": B[0].numpy(), "per_row": B.numpy()}
    e = xai.explain(
        net, X.numpy(), method="deeplift", backend=backend, target=TARGET,
        baselines=ours[baselines],
    )  # fmt: skip
    ref = _captum(captum_attr.DeepLift, module, inputs=X, baselines=B, target=torch.tensor(TARGET))
    np.testing.assert_allclose(e.values, ref, atol=TOL[dtype])
    np.testing.assert_allclose(e.meta["convergence_delta"], 0, atol=100 * TOL[dtype])


def test_deeplift_adjacent_nonlinearities_equal_captum_on_separated_modules():
    """ReLU straight into max pooling: the published rule (Captum's once its modules are
    separated, its issue #1104), summing to f(x) - f(baseline)."""
    module, net, backend, X = _setup("float64", pool="max", split=False)
    B = _baselines(X, 4)
    e = xai.explain(
        net, X.numpy(), method="deeplift", backend=backend, target=TARGET, baseline=B.numpy()
    )
    module.split = Plus0()  # the same weights; Captum's hooks then see fresh gradients
    ref = _captum(captum_attr.DeepLift, module, inputs=X, baselines=B, target=torch.tensor(TARGET))
    np.testing.assert_allclose(e.values, ref, atol=1e-10)
    with torch.no_grad():
        change = (module(X) - module(B)).numpy()[np.arange(4), TARGET]
    np.testing.assert_allclose(e.values.reshape(4, -1).sum(1), change, atol=1e-10)
    np.testing.assert_allclose(e.base_values, module(B).detach().numpy()[np.arange(4), TARGET])


class Stem(torch.nn.Module):
    """resnet's stem (7x7 stride-2 convolution, ReLU, overlapping 3x3 stride-2 max pooling)
    and the activations Captum's DeepLift rescales besides ReLU, tanh and sigmoid."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 7, stride=2, padding=3)
        self.relu = torch.nn.ReLU()
        self.split = Plus0()
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 4, 1)
        self.elu = torch.nn.ELU()
        self.fc1 = torch.nn.Linear(4 * 4 * 4, 8)
        self.leaky = torch.nn.LeakyReLU(0.1)
        self.fc2 = torch.nn.Linear(8, 8)
        self.softplus = torch.nn.Softplus()
        self.fc3 = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = self.pool(self.split(self.relu(self.conv(x))))
        x = self.elu(self.conv2(x))
        x = self.leaky(self.fc1(torch.flatten(x, 1)))
        return self.fc3(self.softplus(self.fc2(x)))


def test_deeplift_overlapping_max_pooling_and_other_activations_equal_captum(dtype):
    """Overlapping windows (max_unpool2d's writes), ELU, LeakyReLU and softplus."""
    module = Stem().eval()
    X = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    net = xai.from_torch(module, X, dtype=dtype)
    if dtype == "float64":
        module, X = module.double(), X.double()
    B = _baselines(X, 4)
    e = xai.explain(
        net, X.numpy(), method="deeplift", backend=xai.get_backend("cpu", dtype=dtype),
        target=TARGET, baselines=B.numpy(),
    )  # fmt: skip
    ref = _captum(captum_attr.DeepLift, module, inputs=X, baselines=B, target=torch.tensor(TARGET))
    np.testing.assert_allclose(e.values, ref, atol=TOL[dtype])


def test_deeplift_shap_equals_captum(dtype):
    """The mean of DeepLift over the baselines of the distribution."""
    module, net, backend, X = _setup(dtype, split=True)
    B = _baselines(X, 3)
    e = xai.explain(
        net, X.numpy(), method="deeplift_shap", backend=backend, target=TARGET,
        background=B.numpy(),
    )  # fmt: skip
    ref = _captum(
        captum_attr.DeepLiftShap, module, inputs=X, baselines=B, target=torch.tensor(TARGET)
    )
    np.testing.assert_allclose(e.values, ref, atol=TOL[dtype])
    np.testing.assert_allclose(
        e.base_values + e.values.reshape(4, -1).sum(1),
        e.meta["output"], atol=100 * TOL[dtype],
    )  # fmt: skip


def test_deeplift_chunks_give_the_same_values():
    """internal_batch_size=1 (one pair per pass) gives the values of one pass."""
    _, net, backend, X = _setup("float64", split=True)
    kw = dict(backend=backend, target=TARGET, baselines=0.1)
    one = xai.explain(net, X.numpy(), method="deeplift", internal_batch_size=1, **kw)
    whole = xai.explain(net, X.numpy(), method="deeplift", **kw)
    np.testing.assert_allclose(one.values, whole.values, atol=1e-12)


@pytest.mark.parametrize("stdevs", [0.0, 0.3], ids=["no_noise", "noise"])
def test_gradient_shap_equals_captum_fed_the_same_draws(dtype, stdevs, monkeypatch):
    """Captum's GradientShap, its numpy and torch draws replaced by ours (same seed, rows)."""
    module, net, backend, X = _setup(dtype)
    B = _baselines(X, 3)
    n_samples = 6
    e = xai.explain(
        net, X.numpy(), method="gradient_shap", backend=backend, target=TARGET,
        baselines=B.numpy(), n_samples=n_samples, stdevs=stdevs, seed=7,
    )  # fmt: skip
    noise, index, alpha = xai_ig.gradient_shap_draws(
        range(4), tuple(X.shape[1:]), 3, n_samples, stdevs, 7
    )
    monkeypatch.setattr(np.random, "choice", lambda m, size: index.reshape(-1).copy())
    monkeypatch.setattr(np.random, "uniform", lambda lo, hi, size: alpha.reshape(-1).copy())
    monkeypatch.setattr(
        torch, "normal", lambda mean, std: torch.tensor(noise.reshape(std.shape), dtype=X.dtype)
    )
    ref = _captum(
        captum_attr.GradientShap, module, inputs=X, baselines=B, target=torch.tensor(TARGET),
        n_samples=n_samples, stdevs=stdevs,
    )  # fmt: skip
    np.testing.assert_allclose(e.values, ref, atol=TOL[dtype])
    assert e.meta["seed"] == 7


def test_gradient_shap_is_seeded_and_chunk_independent():
    """The same seed gives the same values, whatever the chunks; another seed others."""
    _, net, backend, X = _setup("float64")
    B = _baselines(X, 3).numpy()
    kw = dict(backend=backend, target=TARGET, baselines=B, n_samples=4, stdevs=0.1)
    a = xai.explain(net, X.numpy(), method="gradient_shap", seed=3, **kw)
    b = xai.explain(net, X.numpy(), method="gradient_shap", seed=3, internal_batch_size=3, **kw)
    c = xai.explain(net, X.numpy(), method="gradient_shap", seed=4, **kw)
    np.testing.assert_allclose(a.values, b.values, atol=1e-12)
    assert not np.allclose(a.values, c.values)


class LrpNet(torch.nn.Module):
    """Only modules Captum's LRP has default rules for: convolutions, ReLU, pooling, linear."""

    def __init__(self, pool: str):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.relu1 = torch.nn.ReLU()
        self.pool = torch.nn.MaxPool2d(2) if pool == "max" else torch.nn.AvgPool2d(2)
        self.conv2 = torch.nn.Conv2d(4, 6, 3)
        self.relu2 = torch.nn.ReLU()
        self.fc1 = torch.nn.Linear(6 * 3 * 3, 8)
        self.tanh = torch.nn.Tanh()
        self.fc2 = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = self.pool(self.relu1(self.conv1(x)))
        x = self.relu2(self.conv2(x))
        return self.fc2(self.tanh(self.fc1(torch.flatten(x, 1))))


@pytest.mark.parametrize("pool", ["max", "avg"])
@pytest.mark.parametrize("rule", ["epsilon", "alpha1_beta0"])
def test_lrp_equals_captum(dtype, pool, rule):
    """Captum's LRP with the same rule on every convolution and linear module."""
    from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule, EpsilonRule

    module = LrpNet(pool).eval()
    X = torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(1))
    net = xai.from_torch(module, X, dtype=dtype)
    if dtype == "float64":
        module, X = module.double(), X.double()
    epsilon = 1e-9 if rule == "alpha1_beta0" else 1e-3
    for layer in (module.conv1, module.conv2, module.fc1, module.fc2):
        layer.rule = EpsilonRule(epsilon) if rule == "epsilon" else Alpha1_Beta0_Rule()
    module.pool.rule = EpsilonRule(epsilon)
    e = xai.explain(
        net, X.numpy(), method="lrp", backend=xai.get_backend("cpu", dtype=dtype),
        target=TARGET, rule=rule, epsilon=epsilon,
    )  # fmt: skip
    ref = _captum(captum_attr.LRP, module, inputs=X, target=torch.tensor(TARGET))
    if dtype == "float32" and rule == "alpha1_beta0":
        # z = W+ a + b comes near 0 where the stabiliser (1e-9) is below float32's
        # resolution: both libraries' roundings are amplified there (float64 holds 1e-10)
        np.testing.assert_allclose(e.values, ref, atol=1e-5, rtol=2e-3)
    else:
        np.testing.assert_allclose(e.values, ref, atol=TOL[dtype])
    np.testing.assert_allclose(
        e.base_values + e.values.reshape(4, -1).sum(1), e.meta["output"], atol=1e-8
    )


def test_lrp_per_module_rules_equal_captums(dtype):
    """Captum's module.rule per layer: gamma, alpha1_beta0 and two epsilons, by name and index."""
    from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule, EpsilonRule, GammaRule

    module = LrpNet("max").eval()
    X = torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(1))
    net = xai.from_torch(module, X, dtype=dtype)
    names = [layer.name for layer in net.layers]  # the exporter's names: "/conv1/Conv", ...
    conv1, conv2, fc1 = (
        next(n for n in names if n.startswith(f"/{m}/")) for m in ("conv1", "conv2", "fc1")
    )
    if dtype == "float64":
        module, X = module.double(), X.double()
    module.conv1.rule = GammaRule(gamma=0.5)
    module.conv2.rule = Alpha1_Beta0_Rule()
    module.fc1.rule = EpsilonRule(1e-2)
    module.fc2.rule = EpsilonRule(1e-9)
    module.pool.rule = EpsilonRule(1e-9)
    e = xai.explain(
        net, X.numpy(), method="lrp", backend=xai.get_backend("cpu", dtype=dtype),
        target=TARGET, rules={conv1: ("gamma", 0.5), names.index(conv2): "alpha1_beta0",
                              fc1: ("epsilon", 1e-2)},
    )  # fmt: skip
    ref = _captum(captum_attr.LRP, module, inputs=X, target=torch.tensor(TARGET))
    if dtype == "float32":
        np.testing.assert_allclose(e.values, ref, atol=1e-5, rtol=2e-3)
    else:
        np.testing.assert_allclose(e.values, ref, atol=TOL[dtype])
    assert e.meta["rules"] == {conv1: "gamma(0.5)", conv2: "alpha1_beta0", fc1: "epsilon(0.01)"}
    plain = xai.explain(net, X.numpy(), method="lrp", target=TARGET)
    assert not np.allclose(plain.values, e.values)


def test_lrp_gamma_rule_everywhere_equals_captums(dtype):
    """rule="gamma" on every layer with weights: Captum's GammaRule(0.25) on each."""
    from captum.attr._utils.lrp_rules import EpsilonRule, GammaRule

    module = LrpNet("avg").eval()
    X = torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(2))
    net = xai.from_torch(module, X, dtype=dtype)
    if dtype == "float64":
        module, X = module.double(), X.double()
    for layer in (module.conv1, module.conv2, module.fc1, module.fc2):
        layer.rule = GammaRule()
    module.pool.rule = EpsilonRule(1e-9)
    e = xai.explain(
        net, X.numpy(), method="lrp", backend=xai.get_backend("cpu", dtype=dtype),
        target=TARGET, rule="gamma",
    )  # fmt: skip
    ref = _captum(captum_attr.LRP, module, inputs=X, target=torch.tensor(TARGET))
    tol = {"atol": 1e-5, "rtol": 2e-3} if dtype == "float32" else {"atol": TOL[dtype]}
    np.testing.assert_allclose(e.values, ref, **tol)


@pytest.mark.parametrize(
    ("rules", "error", "match"),
    [
        ({"nope": "epsilon"}, xai.UnknownNameError, "nope"),
        ({0: "zplus"}, xai.ValidationError, "zplus"),
        ({0: ("alpha1_beta0", 1.0)}, xai.ValidationError, "no parameter"),
        ({0: ("gamma", -1.0)}, xai.ValidationError, r"rules\[0\] must be a finite number >= 0"),
        ([0], xai.ValidationError, "dict"),
    ],
)
def test_lrp_rules_are_checked_before_any_pass(rules, error, match):
    """A bad per-layer rule names the layer or the rule, before any model call."""
    module = LrpNet("max").eval()
    X = torch.randn(2, 3, 10, 10, generator=torch.Generator().manual_seed(1))
    net = xai.from_torch(module, X)
    with pytest.raises(error, match=match):
        xai.explain(net, X.numpy(), method="lrp", target=[0, 1], rules=rules)


@pytest.mark.parametrize("method", ["deeplift", "deeplift_shap", "gradient_shap", "lrp"])
def test_black_boxes_are_refused_before_any_model_call(method):
    """A black box is refused up front, naming what is missing."""
    _, net, _, X = _setup("float32")
    calls = []

    def f(x):
        calls.append(len(x))
        return np.asarray(net.predict(x))

    box = xai.as_model(f, input_shape=(3, 10, 10))
    kw = {} if method == "lrp" else {"baselines": np.zeros((1, 3, 10, 10), np.float32)}
    with pytest.raises(CapabilityError, match="black box"):
        xai.explain(box, X.numpy(), method=method, target=TARGET, **kw)
    assert calls == []


def test_deeplift_refuses_a_softmax_network():
    """The rescale rule is defined for softmax-free networks: a message naming the node."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Softmax(dim=1)).eval()
    net = xai.from_torch(module, torch.zeros(1, 3))
    with pytest.raises(ValidationError, match="Softmax"):
        xai.explain(net, np.ones((2, 3), np.float32), method="deeplift", target=0)


@pytest.mark.parametrize("method", ["deeplift_shap", "gradient_shap"])
def test_shap_variants_need_baselines(method):
    """Without a distribution of baselines: a message naming the option."""
    _, net, backend, X = _setup("float64")
    with pytest.raises(ValidationError, match="baselines"):
        xai.explain(net, X.numpy(), method=method, backend=backend, target=TARGET)


def test_unknown_backward_rule_lists_the_rules():
    """The walk's rule is checked with the known ones named."""
    _, net, backend, X = _setup("float64")
    runner = xai.ModelRunner(net, backend=backend)
    with pytest.raises(ValidationError, match="rescale"):
        runner.layer_gradient_validated(X.numpy(), TARGET, net.input_name, relu_rule="bogus")


def test_methods_are_registered():
    """The family comes in through the plugin's registration, under Captum's names."""
    names = set(xai.list_explainers())
    assert {"input_x_gradient", "deeplift", "deeplift_shap", "gradient_shap", "lrp"} <= names


def test_linear_model_deeplift_is_weight_times_difference():
    """On a linear model every method of the family is w * (x - baseline)."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(4, 2)).eval()
    X = np.random.default_rng(0).normal(size=(3, 4))
    net = xai.from_torch(module, torch.zeros(1, 4), dtype="float64")
    w = module[0].weight.detach().double().numpy()[1]
    e = xai.explain(net, X, method="deeplift", backend=xai.get_backend("cpu", dtype="float64"),
                    target=1, baselines=0.5)  # fmt: skip
    np.testing.assert_allclose(e.values, w * (X - 0.5), atol=1e-12)


@pytest.mark.parametrize("baselines", [0.0, "zeros", np.zeros((3, 10, 10))], ids=str)
def test_deeplift_shap_of_one_baseline_is_deeplift(baselines):
    """A number, "zeros" or one row of the input's shape is one baseline (no TypeError from
    the cost estimate): DeepLiftShap then equals DeepLift."""
    _, net, backend, X = _setup("float64")
    kw = {"backend": backend, "target": TARGET, "baselines": baselines}
    shap = xai.explain(net, X.numpy(), method="deeplift_shap", **kw)
    lift = xai.explain(net, X.numpy(), method="deeplift", **kw)
    np.testing.assert_allclose(shap.values, lift.values, atol=1e-12)
    assert shap.meta["n_baselines"] == 1
