"""The shipped DeepBench lists: counts, ids, FLOPs, column order, selectors and user kernel files."""

from __future__ import annotations

from collections import Counter

import pytest

from dbench.catalog import (
    ConvKernel,
    GemmKernel,
    RnnKernel,
    Selection,
    SparseKernel,
    load_catalog,
    load_kernel_file,
    select,
)
from dbench.catalog.kernels import Origin
from dbench.errors import KernelFileError, UsageError
from tests.helpers import write_csv

EXPECTED_ROWS = {
    ("gemm", "train"): 160,
    ("gemm", "inference_server"): 75,
    ("gemm", "inference_device"): 13,
    ("conv", "train"): 94,
    ("conv", "inference_server"): 107,
    ("conv", "inference_device"): 16,
    ("rnn", "train"): 53,
    ("rnn", "inference_server"): 69,
    ("rnn", "inference_device"): 3,
    ("sparse", "inference_server"): 24,
    ("sparse", "inference_device"): 8,
}


def test_upstream_row_counts_per_family_and_suite():
    """DeepBench's rows (the transformer suite's own are counted in test_transformer_catalog)."""
    rows = Counter((k.family, o.suite) for k in load_catalog() for o in k.origins if o.source == "deepbench")
    assert dict(rows) == EXPECTED_ROWS


def test_duplicates_are_one_kernel_with_copies():
    conv_server = select(load_catalog(), Selection("inference-server", ops=("conv",)))
    assert len(conv_server) == 103
    assert sum(k.copies("inference_server") for k in conv_server) == 107
    dup = next(k for k in conv_server if k.id == "conv_w7_h7_c512_n1_k512_s3_r3_pw1_ph1_sw1_sh1")
    assert [o.line for o in dup.origins if o.suite == "inference_server"] == [125, 192]


def test_ids_are_unique_and_readable():
    ids = [k.id for k in load_catalog()]
    assert len(ids) == len(set(ids))
    assert "gemm_m1760_n128_k1760_nn" in ids


def test_conv_columns_keep_width_before_height():
    first = select(load_catalog(), Selection("train", ops=("conv",)))[0]
    # Upstream L5: (w=700, h=161, c=1, n=4, k=32, s=20, r=5, pad_w=0, pad_h=0, wstride=2, hstride=2)
    assert (first.w, first.h, first.s, first.r, first.wstride, first.hstride) == (700, 161, 20, 5, 2, 2)
    assert (first.out_w, first.out_h) == (341, 79)


def test_flops_follow_deepbench_formulas():
    assert GemmKernel(m=1760, n=128, k=1760, a_t=False, b_t=False).flops() == 2 * 1760 * 128 * 1760
    conv = ConvKernel(w=700, h=161, c=1, n=4, k=32, s=20, r=5, pad_w=0, pad_h=0, wstride=2, hstride=2)
    assert conv.flops() == 2 * 4 * 32 * 1 * 5 * 20 * 341 * 79
    train, server = Origin(suite="train", app="a", line=1), Origin(suite="inference_server", app="a", line=1)
    t, n, h = 50, 16, 512
    assert RnnKernel(cell="lstm", hidden=h, batch=n, timesteps=t, origins=(train,)).flops() == 8 * t * n * h * h
    assert (
        RnnKernel(cell="lstm", hidden=h, batch=n, timesteps=t, origins=(server,)).flops()
        == 8 * t * n * h * h + t * n * h
    )
    assert RnnKernel(cell="gru", hidden=h, batch=n, timesteps=t, origins=(train,)).flops() == 6 * t * n * h * h
    assert (
        RnnKernel(cell="vanilla", hidden=h, batch=n, timesteps=t, origins=(train,)).flops()
        == 2 * t * n * h * h + t * n * h
    )
    assert SparseKernel(m=7680, n=1, k=2560, a_t=False, b_t=False, sparsity=0.95).flops() == round(
        2 * 7680 * 2560 * 0.95
    )


def test_min_bytes_counts_every_operand_once():
    gemm = GemmKernel(m=4, n=3, k=2, a_t=False, b_t=False)
    assert gemm.min_bytes(4) == 4 * (4 * 2 + 2 * 3 + 2 * 4 * 3)


@pytest.mark.parametrize(
    "suite,expected",
    [
        ("train", {"train"}),
        ("inference", {"inference_server", "inference_device"}),
        ("inference-server", {"inference_server"}),
        ("inference-device", {"inference_device"}),
        ("all", {"train", "inference_server", "inference_device"}),
    ],
)
def test_suite_selectors(suite, expected):
    """A selector picks exactly the kernels with a row in its suites, in catalog order, and their
    upstream rows add up to the table above."""
    catalog = load_catalog()
    selected = select(catalog, Selection(suite))
    assert [k.id for k in selected] == [k.id for k in catalog if set(k.suites) & expected]
    rows = sum(k.copies(s) for k in selected for s in expected)
    assert rows == sum(n for (_, s), n in EXPECTED_ROWS.items() if s in expected) > 0


def test_op_app_and_pattern_filters():
    lstm = select(load_catalog(), Selection("all", ops=("lstm",)))
    assert lstm and all(k.op == "lstm" for k in lstm)
    rnn = select(load_catalog(), Selection("all", ops=("rnn",)))
    assert sum(len(k.origins) for k in rnn) == 125  # 124 kernels: one LSTM is in both inference suites
    resnet = select(load_catalog(), Selection("all", apps=("resnet",)))
    assert resnet and all(any(a.lower() == "resnet" for a in k.apps) for k in resnet)
    pattern = select(load_catalog(), Selection("all", pattern="gemm_m1760_*"))
    assert pattern and all(k.id.startswith("gemm_m1760_") for k in pattern)
    either = select(load_catalog(), Selection("all", pattern="gemm_m1760_*,conv_w7_h7_c832_*"))
    assert {k.id.split("_")[0] for k in either} == {"gemm", "conv"} and len(either) > len(pattern)


@pytest.mark.parametrize("suite,ops", [("nope", ()), ("all", ("fft",))])
def test_unknown_suite_or_op_is_a_usage_error(suite, ops):
    with pytest.raises(UsageError, match="valid"):
        Selection(suite, ops=ops)


def test_user_kernel_file(tmp_path):
    path = write_csv(
        tmp_path / "mine.csv", "m,n,k,a_t,b_t,app", "64,8,32,0,1,MyNet", "64,8,32,0,1,MyNet", "16,4,8,1,0,"
    )
    kernels = load_kernel_file(path)
    assert [k.id for k in kernels] == ["gemm_m64_n8_k32_nt", "gemm_m16_n4_k8_tn"]
    assert kernels[0].copies("user") == 2 and kernels[1].apps == ("user",)


@pytest.mark.parametrize(
    "header,row,column,problem",
    [
        ("m,n,a_t,b_t", "4,4,0,0", "k", "missing column"),
        ("m,n,k,a_t,b_t", "4,x,4,0,0", "n", "must be an integer"),
        ("m,n,k,a_t,b_t", "4,0,4,0,0", "n", "positive"),
        ("m,n,k,a_t,b_t", "4,4,4,2,0", "a_t", "0 or 1"),
        ("w,h,c,n,k,s,r,pad_w,pad_h,wstride,hstride", "8,8,1,1,4,11,3,1,1,1,1", "s", "larger than the padded input"),
        ("w,h,c,n,k,s,r,pad_w,pad_h,wstride,hstride", "8,8,1,1,4,3,3,-1,1,1,1", "pad_w", "non-negative"),
        ("cell,hidden,batch,timesteps", "transformer,8,1,4", "cell", "unknown cell"),
        ("cell,hidden,batch,timesteps", "lstm,0,1,4", "hidden", "positive"),
        ("m,n,k,a_t,b_t,sparsity", "4,4,4,0,0,1.5", "sparsity", "between 0 and 1"),
    ],
)
def test_bad_kernel_file_names_file_row_and_column(tmp_path, header, row, column, problem):
    path = write_csv(tmp_path / "bad.csv", header, row)
    with pytest.raises(KernelFileError) as info:
        load_kernel_file(path)
    message = str(info.value)
    row_number = 1 if problem == "missing column" else 2  # the header is row 1
    assert str(path) in message and f"row {row_number}," in message and f"'{column}'" in message and problem in message
