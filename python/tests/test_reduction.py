"""reduce_tune.Reduction: construction and its checks, the stable hash (the C++ library's), NVRTC's
log in the error of a description that does not compile (no GPU needed), and, on a GPU, values on
torch tensors and CuPy arrays against NumPy."""
from __future__ import annotations

import pytest

import reduce_tune as rt


def _nvrtc_or_skip():
    try:
        rt.nvrtc_info()
    except RuntimeError as e:
        pytest.skip(f"no NVRTC: {e}")


def test_construction_checks_its_fields():
    r = rt.Reduction(map="x * x", combine="a + b", identity="0", post="sqrt(a)")
    assert r.name.startswith("user:") and len(r.name) == 5 + 16
    assert "Reduction(map='x * x'" in repr(r)
    assert r.result_dtype("float32") == "float32"
    assert rt.Reduction(map="double(x)", accumulator="double", dtype="float64").result_dtype("int32") == "float64"
    with pytest.raises(ValueError, match="post is empty"):
        rt.Reduction(post=" ")
    with pytest.raises(ValueError, match="accumulator_bytes"):
        rt.Reduction(accumulator="struct_t")
    with pytest.raises(TypeError):
        rt.Reduction(map=3)
    with pytest.raises(TypeError):
        rt.Reduction(check="not callable")
    with pytest.raises(ValueError, match="takes float32"):
        rt.Reduction(inputs=["float32"]).result_dtype("int32")


def test_the_hash_is_stable_and_the_libraries():
    r = rt.Reduction(map="x * x", combine="a + b", identity="0", post="a")
    # The C++ tests pin the same description to the same name (tests/test_user_ops.cpp).
    assert r.name == "user:69f2b7ac46dfbd88"
    assert r.hash == 0x69F2B7AC46DFBD88
    # White space around a field and the check are not the description; every field is.
    assert rt.Reduction(map=" x * x\n", check=lambda a, axis=None: a).name == r.name
    assert rt.Reduction(map="x * x", post="sqrt(a)").name != r.name
    assert rt.Reduction(map="x * x", commutative=False).name != r.name
    assert rt.Reduction(map="x * x", dtype="float64").name != r.name
    assert "map 5\nx * x\n" in r.canonical()


def test_a_description_that_does_not_compile_raises_with_nvrtcs_log():
    _nvrtc_or_skip()
    bad = rt.Reduction(map="x * y")
    with pytest.raises(ValueError) as e:
        bad.compile("float32")
    text = str(e.value)
    assert bad.name in text and "map(1)" in text and '"y"' in text
    rt.Reduction(map="x * x", post="sqrt(a)").compile("float32")  # a good one compiles


@pytest.mark.gpu
def test_values_on_torch(torch):
    import numpy as np
    norm = rt.Reduction(map="x * x", post="sqrt(a)",
                        check=lambda a, axis=None: np.sqrt((a.astype(np.float64) ** 2).sum(axis=axis)))
    x = torch.randn(1000, 37, device="cuda")
    for dim in (None, 0, 1, -1):
        assert norm.verify(x, dim), dim
    y = norm(x, dim=1, keepdim=True)
    assert isinstance(y, torch.Tensor) and y.shape == (1000, 1) and y.device == x.device
    torch.testing.assert_close(norm(x), torch.linalg.vector_norm(x), rtol=1e-5, atol=1e-5)
    # A struct accumulator: logsumexp.
    lse = rt.Reduction(preamble="struct ms { float m, s; };"
                                "__device__ ms merge(ms a, ms b) { float m = fmaxf(a.m, b.m);"
                                " if (m == -INFINITY) return a;"
                                " return ms{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)}; }",
                       accumulator="ms", accumulator_bytes=8, identity="{-INFINITY, 0.f}",
                       map="ms{x, 1.f}", combine="merge(a, b)", post="a.m + logf(a.s)")
    torch.testing.assert_close(lse(x, dim=-1), torch.logsumexp(x, dim=-1), rtol=1e-5, atol=1e-5)
    # Segments, and a non-commutative combine: the index (plus one) of the first non-zero element.
    first = rt.Reduction(map="x != 0 ? double(i + 1) : 0.0", combine="a != 0 ? a : b",
                         identity="0.0", accumulator="double", dtype="float64", commutative=False)
    z = torch.zeros(100, 50, device="cuda")
    z[torch.arange(100), torch.arange(100) % 50] = 1.0
    assert torch.equal(first(z, dim=1).cpu(), (torch.arange(100) % 50 + 1).double())
    offsets = torch.tensor([0, 10, 10, 60], dtype=torch.int64, device="cuda")
    v = torch.arange(60, dtype=torch.float32, device="cuda")
    assert first.segments(v, offsets).cpu().tolist() == [2.0, 0.0, 1.0]


@pytest.mark.gpu
def test_values_on_cupy(cupy):
    import numpy as np
    mean = rt.Reduction(map="double(x)", accumulator="double", identity="0.0",
                        post="a / double(count)", dtype="float64", inputs=["int32"],
                        check=lambda a, axis=None: a.mean(axis=axis, dtype=np.float64))
    x = cupy.arange(4096 * 3, dtype=cupy.int32).reshape(4096, 3) - 5000
    for dim in (None, 0, 1):
        assert mean.verify(x, dim), dim
    assert isinstance(mean(x, dim=0), cupy.ndarray)
