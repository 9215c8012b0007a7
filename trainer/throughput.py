"""The peak a device could reach, for model FLOPs utilization: a known GPU's dense bf16 peak, or measured."""

import time

import torch

GPU_PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10": 125e12}


def peak_flops(device: torch.device, given_tflops: float | None) -> tuple[float, str]:
    """(FLOP/s, where the figure comes from) for one device."""
    if given_tflops:
        return given_tflops * 1e12, "given"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, peak in GPU_PEAK_BF16.items():
            if key in name:
                return peak, f"{name} dense bf16 datasheet"
    return measured_matmul_flops(device), "measured fp32 matmul"


def measured_matmul_flops(device: torch.device, size: int = 512, seconds: float = 0.2) -> float:
    """The best fp32 matmul rate over repeated square products, with this process's threads."""
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    best, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        began = time.perf_counter()
        for _ in range(4):
            a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = max(best, 4 * 2 * size**3 / (time.perf_counter() - began))
    return best
