"""Throughput as a run reports it: tokens/s and achieved FLOP/s always; model FLOPs utilization (MFU) only
against a peak that is known (a GPU of the table below, by its exact name, or --peak-tflops), and never above
100%: a peak below what was achieved is not a peak, and MFU is then left out (null)."""

from dataclasses import dataclass
from typing import Callable

import torch

from trainer import metrics

# Dense (no sparsity) bf16 tensor-core peak per GPU, in TFLOP/s, keyed by the exact name
# torch.cuda.get_device_name reports. Datasheets give bf16 "with sparsity"; the dense figure is half of it.
GPU_PEAK_BF16_TFLOPS = {
    "NVIDIA H100 80GB HBM3": 989.5,  # H100 SXM5; NVIDIA H100 Tensor Core GPU datasheet: 1,979 sparse
    "NVIDIA H100 PCIe": 756.5,  # same datasheet, H100 PCIe column: 1,513 sparse
    "NVIDIA H100 NVL": 835.5,  # same datasheet, H100 NVL column: 1,671 sparse
    "NVIDIA H200": 989.5,  # H200 SXM; NVIDIA H200 Tensor Core GPU datasheet: 1,979 sparse
    "NVIDIA H200 NVL": 835.5,  # same datasheet, H200 NVL column: 1,671 sparse
    "NVIDIA B200": 2250.0,  # NVIDIA HGX B200 datasheet: 36 PFLOPS sparse per 8 GPUs
    "NVIDIA A100-SXM4-80GB": 312.0,  # NVIDIA A100 Tensor Core GPU datasheet: 312 dense, SXM and PCIe alike
    "NVIDIA A100-SXM4-40GB": 312.0,
    "NVIDIA A100 80GB PCIe": 312.0,
    "NVIDIA A100-PCIE-40GB": 312.0,
    "NVIDIA L40S": 362.05,  # NVIDIA L40S datasheet: 733 sparse
    "NVIDIA L40": 181.05,  # NVIDIA L40 datasheet: 362.1 sparse
    "NVIDIA L4": 121.0,  # NVIDIA L4 datasheet: 242 sparse
    "NVIDIA A10": 125.0,  # NVIDIA A10 datasheet: 250 sparse
}


def gpu_peak_flops(name: str) -> float | None:
    """The dense bf16 peak FLOP/s of a GPU of this exact name, or None for one the table does not hold."""
    tflops = GPU_PEAK_BF16_TFLOPS.get(name.strip())
    return tflops * 1e12 if tflops else None


@dataclass(frozen=True)
class Peak:
    """One device's peak FLOP/s (None when unknown), and where it comes from, or why there is none."""
    flops: float | None
    source: str


def device_peak(device: torch.device, given_tflops: float | None) -> Peak:
    if given_tflops:
        return Peak(given_tflops * 1e12, "given (--peak-tflops)")
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        flops = gpu_peak_flops(name)
        if flops:
            return Peak(flops, f"{name} dense bf16 datasheet")
        return Peak(None, f"no MFU: no known peak for GPU '{name}'; pass --peak-tflops")
    return Peak(None, f"no MFU: no known peak on {device.type}; pass --peak-tflops")


class Throughput:
    """A step's tokens/s, achieved FLOP/s (in all and per device) and MFU, from the model's training FLOPs
    per token; warns once (with `warn`) when the given peak turns out below what a device achieved."""

    def __init__(self, flops_per_token: float, world_size: int, peak: Peak, warn: Callable[[str], object]):
        self.flops_per_token, self.world_size, self.peak, self.warn = flops_per_token, world_size, peak, warn
        self.warned = False

    def of_step(self, tokens: int, seconds: float) -> dict:
        tokens_per_second = tokens / seconds
        achieved = self.flops_per_token * tokens_per_second
        per_device = achieved / self.world_size
        return {metrics.TOKENS_PER_SECOND: tokens_per_second, metrics.FLOPS_PER_SECOND: achieved,
                metrics.FLOPS_PER_SECOND_PER_DEVICE: per_device, metrics.MFU: self.mfu(per_device),
                metrics.PEAK_FLOPS: self.peak.flops, metrics.PEAK_SOURCE: self.peak.source}

    def mfu(self, per_device: float) -> float | None:
        if self.peak.flops is None:
            return None
        if per_device > self.peak.flops:
            if not self.warned:
                self.warn(f"warning: the peak {self.peak.flops / 1e12:.4g} TFLOP/s ({self.peak.source}) is below the "
                          f"{per_device / 1e12:.4g} TFLOP/s a device achieved; MFU is left out (null) where it "
                          "would pass 100%: give the device's real peak with --peak-tflops")
                self.warned = True
            return None
        return per_device / self.peak.flops
