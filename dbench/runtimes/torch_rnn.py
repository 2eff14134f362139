"""Recurrent layers in PyTorch, mapped exactly onto dbench's graphs (dbench/gen/rnn.py, rnn_math.py).

Form `op` (ONNX RNN / LSTM / GRU over X with W, R, B): torch.nn.RNN / LSTM / GRU, the whole layer in
one library call (oneDNN or ATen's kernels on the CPU, cuDNN on the GPU). The mapping:
  vanilla  ONNX RNN with Relu: nn.RNN(nonlinearity="relu"), W -> weight_ih, R -> weight_hh,
           B = [Wb, Rb] -> bias_ih, bias_hh; no reordering.
  LSTM     ONNX gate blocks i, o, f, c; torch's i, f, g, o: blocks [0, 2, 3, 1] of W, R, Wb and Rb.
           ONNX's defaults (no peepholes, sigmoid/tanh/tanh, input_forget 0) are torch's cell.
  GRU      ONNX blocks z, r, h; torch's r, z, n: blocks [1, 0, 2]. The graphs set
           linear_before_reset=1: h~ = tanh(x·Wh^T + Wbh + r ⊙ (h·Rh^T + Rbh)), torch's own form.
           A ReLU candidate (`op_relu`) has no torch.nn.GRU form: unsupported.
The reordering is a permutation of the weights made once (load or bind), outside timing.

Form `recurrence` (DeepBench's recurrence over pre-projected inputs) and the `bptt` weight-gradient
pass have no library call in PyTorch (cuDNN's backward needs its own forward's reserve space, which the
graph's recorded activations cannot fill): they run as the graph does, step by step, each step's
GEMM and elementwise math as PyTorch ops (eager), with the same equations as rnn_math."""

from __future__ import annotations

from typing import Any

from dbench.catalog.kernels import RnnKernel
from dbench.errors import UnsupportedError
from dbench.runtimes.torch_kernels import TorchKernel

GATE_ORDER = {"vanilla": [0], "lstm": [0, 2, 3, 1], "gru": [1, 0, 2]}
"""torch's gate blocks as indices of ONNX's (LSTM iofc -> ifgo, GRU zrh -> rzn)."""


def reorder_gates(torch, tensor, cell: str, hidden: int):
    """The gate blocks (of `hidden` rows each, along dim 0) in torch's order."""
    blocks = tensor.split(hidden, dim=0)
    return torch.cat([blocks[i] for i in GATE_ORDER[cell]], dim=0)


def _base_form(spec) -> str:
    return spec.form.removesuffix("_relu")


class RnnLayer(TorchKernel):
    """Form `op`: the layer as one torch.nn.RNN / LSTM / GRU call."""

    MODULES = {"vanilla": "RNN", "lstm": "LSTM", "gru": "GRU"}

    def __init__(self, torch, spec, device: str) -> None:
        super().__init__(torch, spec, device)
        self.kernel = RnnKernel(**spec.params)
        if self.kernel.cell == "gru" and spec.attrs.get("gru_activation", "tanh") != "tanh":
            raise UnsupportedError(
                "torch.nn.GRU has a tanh candidate only; this GRU's candidate is ReLU (op_relu form)"
            )
        h = self.kernel.hidden
        options = {"nonlinearity": "relu"} if self.kernel.cell == "vanilla" else {}
        dtype = getattr(torch, spec.inputs[0].dtype)
        self.module = getattr(torch.nn, self.MODULES[self.kernel.cell])(
            h, h, num_layers=1, bias=True, batch_first=False, device=device, dtype=dtype, **options
        )
        self.module.requires_grad_(False)
        self.module.eval()
        self.loaded: set[str] = set()

    def _set_weights(self, tensors: dict[str, Any]) -> None:
        """Copy W, R and B (whichever are given) into the module in torch's gate order."""
        torch, cell, h = self.torch, self.kernel.cell, self.kernel.hidden
        gh = self.kernel.gates * h
        targets = {
            "W": [("weight_ih_l0", lambda t: t[0])],
            "R": [("weight_hh_l0", lambda t: t[0])],
            "B": [("bias_ih_l0", lambda t: t[0, :gh]), ("bias_hh_l0", lambda t: t[0, gh:])],
        }
        with torch.no_grad():
            for name, places in targets.items():
                if name in tensors:
                    for attribute, part in places:
                        getattr(self.module, attribute).copy_(reorder_gates(torch, part(tensors[name]), cell, h))
        if self.device != "cpu":
            self.module.flatten_parameters()  # cuDNN reads one contiguous weight buffer

    def load(self, constants: dict[str, Any]) -> None:
        super().load(constants)
        self._set_weights(constants)
        self.loaded = set(constants)

    def arguments(self) -> None:
        self._set_weights({k: v for k, v in self.inputs.items() if k not in self.loaded})
        i = self.inputs
        self.state = (i["initial_h"], i["initial_c"]) if self.kernel.cell == "lstm" else i["initial_h"]
        self.result = None

    def run(self) -> None:
        self.result = self.module(self.inputs["X"], self.state)[0]

    def outputs(self) -> dict[str, Any]:
        return {"Y": self.result.unsqueeze(1)}  # [T, N, H] -> ONNX's [T, num_directions, N, H]

    def describe(self) -> dict[str, Any]:
        return {
            "call": f"torch.nn.{self.MODULES[self.kernel.cell]}",
            "gate_order": "reordered from ONNX's at load/bind",
        }


class Recurrence(TorchKernel):
    """Form `recurrence`: per step rec = Rb + h·R^T (torch.addmm) and the cell's gates, as the graph's
    Loop body does, into a preallocated Y [T, N, H]."""

    def __init__(self, torch, spec, device: str) -> None:
        super().__init__(torch, spec, device)
        self.kernel = RnnKernel(**spec.params)
        self.activation = spec.attrs.get("gru_activation", "tanh")

    def arguments(self) -> None:
        i = self.inputs
        self.r_t, self.rb = i["R"][0].t(), i["Rb"][0]
        self.h0 = i["initial_h"][0]
        self.c0 = i["initial_c"][0] if self.kernel.cell == "lstm" else None
        out = self.spec.outputs[0]
        self.y = self.torch.empty(out.shape, dtype=self.h0.dtype, device=self.device)

    def run(self) -> None:
        torch, cell, hidden = self.torch, self.kernel.cell, self.kernel.hidden
        h, c = self.h0, self.c0
        for t, xw in enumerate(self.inputs["XW"]):
            rec = torch.addmm(self.rb, h, self.r_t)
            if cell == "vanilla":
                h = torch.relu(xw + rec)
            elif cell == "lstm":
                a = xw + rec
                i, o, f = torch.sigmoid(a[:, : 3 * hidden]).split(hidden, dim=1)
                c = f * c + i * torch.tanh(a[:, 3 * hidden :])
                h = o * torch.tanh(c)
            else:
                xz, xr, xh = xw.split(hidden, dim=1)
                rz, rr, rh = rec.split(hidden, dim=1)
                z, r = torch.sigmoid(xz + rz), torch.sigmoid(xr + rr)
                pre = xh + r * rh
                cand = torch.tanh(pre) if self.activation == "tanh" else torch.relu(pre)
                h = cand + z * (h - cand)
            self.y[t] = h

    def outputs(self) -> dict[str, Any]:
        return {"Y": self.y}

    def describe(self) -> dict[str, Any]:
        return {
            "call": "eager PyTorch ops per step (torch.addmm + the cell's gates): no library call takes "
            "pre-projected inputs"
        }


class Backprop(TorchKernel):
    """Pass `bwd_weights`, form `bptt`: the gate gradients step by step from the last step (dh flows
    back through R, one torch.mm per step), then dR as one GEMM over all steps and dB as sums, from the
    graph's recorded forward (dY, Y, initial_h; LSTM C, initial_c; gates)."""

    def __init__(self, torch, spec, device: str) -> None:
        super().__init__(torch, spec, device)
        self.kernel = RnnKernel(**spec.params)
        self.activation = spec.attrs.get("gru_activation", "tanh")

    def arguments(self) -> None:
        torch, i, k = self.torch, self.inputs, self.kernel
        t, n, h = k.timesteps, k.batch, k.hidden
        self.r = i["R"][0]
        h0 = i["initial_h"][0]
        earlier = [h0] + ([i["Y"][: t - 1]] if t > 1 else [])
        self.h_prev = torch.cat([e.reshape(-1, n, h) for e in earlier], dim=0)  # the state before each step
        self.c_prev = None
        if k.cell == "lstm":
            c0 = i["initial_c"][0]
            self.c_prev = torch.cat([c0.reshape(1, n, h)] + ([i["C"][: t - 1]] if t > 1 else []), dim=0)
        self.d_rec = torch.empty((t, n, k.gates * h), dtype=h0.dtype, device=self.device)
        self.dah = torch.empty((t, n, h), dtype=h0.dtype, device=self.device) if k.cell == "gru" else None
        self.zeros = torch.zeros((n, h), dtype=h0.dtype, device=self.device)

    def run(self) -> None:
        torch, i, k = self.torch, self.inputs, self.kernel
        hidden = k.hidden
        dh_rec, dc_next = self.zeros, self.zeros
        for t in reversed(range(k.timesteps)):
            dh = i["dY"][t] + dh_rec
            if k.cell == "vanilla":
                d = dh * (i["Y"][t] > 0)
                self.d_rec[t] = d
                dh_rec = torch.mm(d, self.r)
            elif k.cell == "lstm":
                g, o, f, cand = i["gates"][t].split(hidden, dim=1)
                tc = torch.tanh(i["C"][t])
                dc = dc_next + dh * o * (1 - tc * tc)
                dc_next = dc * f
                torch.cat(
                    [
                        dc * cand * g * (1 - g),
                        dh * tc * o * (1 - o),
                        dc * self.c_prev[t] * f * (1 - f),
                        dc * g * (1 - cand * cand),
                    ],
                    dim=1,
                    out=self.d_rec[t],
                )
                dh_rec = torch.mm(self.d_rec[t], self.r)
            else:
                z, r, cand, rh = i["gates"][t].split(hidden, dim=1)
                grad = 1 - cand * cand if self.activation == "tanh" else (cand > 0).to(cand.dtype)
                dah = dh * (1 - z) * grad
                daz = dh * (self.h_prev[t] - cand) * z * (1 - z)
                dar = dah * rh * r * (1 - r)
                self.dah[t] = dah
                torch.cat([daz, dar, dah * r], dim=1, out=self.d_rec[t])
                dh_rec = torch.mm(self.d_rec[t], self.r) + dh * z
        steps = k.timesteps * k.batch
        d_rec = self.d_rec.reshape(steps, k.gates * hidden)
        self.d_r = torch.mm(d_rec.t(), self.h_prev.reshape(steps, hidden))
        drb = d_rec.sum(dim=0)
        dwb = torch.cat([drb[: 2 * hidden], self.dah.reshape(steps, hidden).sum(dim=0)]) if k.cell == "gru" else drb
        self.d_b = torch.cat([dwb, drb])

    def outputs(self) -> dict[str, Any]:
        return {"dR": self.d_r.unsqueeze(0), "dB": self.d_b.unsqueeze(0)}

    def describe(self) -> dict[str, Any]:
        return {
            "call": "eager PyTorch ops per step (back-propagation through time as the graph's Loop): "
            "cuDNN/oneDNN's RNN backward needs their own forward's reserve space"
        }


def rnn_kernel(torch, spec, device: str) -> TorchKernel:
    """The PyTorch computation of a recurrent graph of any form."""
    base = _base_form(spec)
    if spec.pass_name == "bwd_weights":
        return Backprop(torch, spec, device)
    if base == "op":
        return RnnLayer(torch, spec, device)
    if base == "recurrence":
        return Recurrence(torch, spec, device)
    raise UnsupportedError(f"no PyTorch mapping for rnn form {spec.form!r}")
