"""The process group and the model wrapped for it: DDP by default, FSDP2 (`fully_shard`) on request. gloo on
CPU, NCCL on GPU; one process without torchrun needs no group at all."""

import os
import shutil
import sys
from dataclasses import dataclass
from typing import NoReturn

import torch
import torch.distributed as dist
from torch import nn

from base.errors import UserError
from trainer.host_memory import keep_freed_memory


def in_group() -> bool:
    """Whether this process has joined a process group (torchrun, or a test's init_process_group)."""
    return dist.is_available() and dist.is_initialized()


@dataclass(frozen=True)
class Ranks:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return in_group()


def pick_device(preference: str) -> torch.device:
    if preference == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if preference.startswith("cuda") and not torch.cuda.is_available():
        raise UserError("--device cuda, but torch sees no GPU; use --device cpu (or auto)")
    return torch.device(preference)


def setup(preference: str) -> Ranks:
    """Joins the group torchrun describes in the environment (RANK, WORLD_SIZE, MASTER_ADDR ...), if any."""
    device = pick_device(preference)
    if device.type == "cpu":
        keep_freed_memory()
    if "WORLD_SIZE" not in os.environ:
        return Ranks(0, 1, 0, device)
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if device.type == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    if not in_group():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", device_id=device if device.type == "cuda" else None)
    return Ranks(dist.get_rank(), dist.get_world_size(), local_rank, device)


def teardown() -> None:
    if in_group():
        dist.destroy_process_group()


def exit_rank(code: int) -> NoReturn:
    """Ends a rank's process without interpreter teardown. Once DDP or FSDP2 has used a gloo group, its
    threads outlive destroy_process_group (torch 2.13), and at exit they aborted one 2-rank run in 51
    (SIGABRT, "terminate called without an active exception") after its work was done and written: torchrun
    or mp.spawn then reports a finished run as failed."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


FP32, BF16_AUTOCAST, BF16_FSDP2 = "fp32", "bf16-autocast", "bf16-fsdp2"


def precision(ranks: Ranks, fsdp: bool) -> str:
    """fp32 on CPU; on GPU bf16 through FSDP2's mixed-precision policy when sharding, else through autocast."""
    if ranks.device.type != "cuda":
        return FP32
    return BF16_FSDP2 if fsdp and ranks.distributed else BF16_AUTOCAST


def wrap(model: nn.Module, ranks: Ranks, fsdp: bool, compile_blocks: bool = False) -> nn.Module:
    """The model as the step sees it. Blocks are compiled first, one by one, as torchtitan does (its
    apply_compile: after activation checkpointing, before FSDP). Under FSDP2 each block is its own shard unit,
    then the root (embedding, final norm and head); on GPU with bf16 compute and fp32 gradient reduction.
    Buffers are not broadcast: every rank updates them identically (see MoE)."""
    if compile_blocks:
        compile_each_block(model, ranks.device)
    if not ranks.distributed:
        return model
    if fsdp:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        policy = MixedPrecisionPolicy()
        if precision(ranks, fsdp) == BF16_FSDP2:
            policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.layers:
            fully_shard(layer, mp_policy=policy)
        return fully_shard(model, mp_policy=policy)
    from torch.nn.parallel import DistributedDataParallel

    device_ids = [ranks.device.index] if ranks.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids, forward_sync_buffers=False)


def compile_each_block(model: nn.Module, device: torch.device) -> None:
    """torch.compile (inductor) of each block's forward. Only the forward is replaced, not the block (as
    torch.compile(block) would): parameter names, so checkpoints and the norm groups, stay as they are, and the
    FSDP2/DDP hooks on the block run outside the compiled code."""
    if device.type == "cpu" and not shutil.which(os.environ.get("CXX", "g++")):
        raise UserError(f"--compile on CPU needs a C++ compiler for inductor, and "
                        f"'{os.environ.get('CXX', 'g++')}' is not on PATH; install g++ (or set CXX), or train "
                        "without --compile")
    for block in model.layers:
        block.forward = torch.compile(block.forward)


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    if in_group():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's part of a parameter: its shard under FSDP2 (a DTensor), the whole tensor otherwise."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor
