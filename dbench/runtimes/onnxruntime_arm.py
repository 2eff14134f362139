"""ONNX Runtime's ARM execution providers, XNNPACK and the Arm Compute Library: the CPU adapter with
another provider, usable only where the installed onnxruntime build has it (PyPI's wheels have
neither, on x86 or aarch64), with a message naming what provides it."""

from __future__ import annotations

from typing import ClassVar

from dbench.runtimes.onnxruntime import CPU_OPTIONS, OrtCpu, _ort


class OrtArmProvider(OrtCpu):
    """ORT with an execution provider that only some builds hold; nodes it lacks fall back to CPU."""

    reports_execution: ClassVar[bool] = False
    """dbench predict reads ONNX Runtime's layer names as its CPU provider writes them; how these
    providers name theirs is unchecked (no such build here), so they are not offered for it."""

    provided_by: ClassVar[str]
    """What provides the execution provider when the installed build lacks it."""

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """These providers are linked into onnxruntime's core library (no provider library to look for on
        disk), so the installed build is asked: this imports onnxruntime."""
        installed, reason = super().availability()
        if not installed:
            return installed, reason
        try:
            providers = _ort().get_available_providers()
        except Exception as err:  # a broken install: say so rather than raise
            return False, f"onnxruntime does not load ({type(err).__name__}: {err})"
        if cls.provider not in providers:
            return False, f"{cls.provider} is not in this onnxruntime build ({', '.join(providers)}): {cls.provided_by}"
        return True, ""


class OrtXnnpack(OrtArmProvider):
    """ONNX Runtime, XnnpackExecutionProvider (NEON kernels for fp32/fp16 on ARM)."""

    name: ClassVar[str] = "ort-xnnpack"
    provider: ClassVar[str] = "XnnpackExecutionProvider"
    provided_by: ClassVar[str] = (
        "onnxruntime's PyPI wheels do not include the XNNPACK EP: build onnxruntime with --use_xnnpack "
        "(or install a build that has it)"
    )

    def provider_options(self) -> dict[str, str]:
        # XNNPACK runs its own thread pool; the session's intra-op pool should then stay small.
        return {
            "intra_op_num_threads": str(self.options.thread_count),
            **{k: v for k, v in self.options.extra.items() if k not in CPU_OPTIONS},
        }


class OrtAcl(OrtArmProvider):
    """ONNX Runtime, ACLExecutionProvider (Arm Compute Library kernels)."""

    name: ClassVar[str] = "ort-acl"
    provider: ClassVar[str] = "ACLExecutionProvider"
    provided_by: ClassVar[str] = (
        "onnxruntime's PyPI wheels for aarch64 do not include the ACL EP: build onnxruntime with --use_acl "
        "(or install a build that has it)"
    )
