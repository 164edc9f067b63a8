"""Write a big, real-looking SGLang serving log: an 8-rank startup, then hours of serving lines.

Used by bench/scan.py; also handy by hand: `python bench/gen_log.py OUT.log --mb 300`.
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta

STARTUP = """\
[{t}] server_args=ServerArgs(model_path='/models/DeepSeek-V3', tp_size=8, speculative_algorithm='EAGLE3', watchdog_timeout=300, error_on_timeout=False)
{ranks:Init torch distributed begin.}
{ranks:Load weight begin. avail mem=139.20 GB}
Loading safetensors checkpoint shards:   0% Completed | 0/163 [00:00<?, ?it/s]\rLoading safetensors checkpoint shards:  50% Completed | 82/163 [02:00<02:00,  1.46s/it]\rLoading safetensors checkpoint shards: 100% Completed | 163/163 [04:00<00:00,  1.47s/it]
{ranks:Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=70.12 GB, mem usage=69.08 GB.}
{ranks:KV Cache is allocated. #tokens: 812345, KV size: 40.10 GB}
{ranks:Memory pool end. avail mem=29.80 GB}
{ranks:Capture cuda graph begin. This can take up to several minutes. avail mem=29.60 GB}
Capturing batches (bs=160 avail_mem=29.50 GB):  50%|#####     | 12/23 [00:10<00:09,  1.20it/s]\rCapturing batches (bs=1 avail_mem=28.90 GB): 100%|##########| 23/23 [00:20<00:00,  1.15it/s]
{ranks:Capture cuda graph end. Time elapsed: 21.30 s. mem usage=0.70 GB. avail mem=28.90 GB.}
{ranks:Load weight begin. avail mem=28.90 GB}
{ranks:Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=27.90 GB, mem usage=1.00 GB.}
{ranks:Memory pool end. avail mem=25.10 GB}
{ranks:Capture draft cuda graph begin. This can take up to several minutes. avail mem=25.00 GB}
{ranks:Capture draft cuda graph end. Time elapsed: 9.10 s. mem usage=0.40 GB. avail mem=24.60 GB.}
[{t} TP0] max_total_num_tokens=812345, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=256, context_len=163840, available_gpu_mem=24.60 GB
[{t}] INFO:     Started server process [4242]
[{t}] INFO:     Waiting for application startup.
[{t}] INFO:     Application startup complete.
[{t}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[{t}] INFO:     127.0.0.1:51234 - "GET /model_info HTTP/1.1" 200 OK
[{t} TP0] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0
[{t}] INFO:     127.0.0.1:51240 - "POST /generate HTTP/1.1" 200 OK
[{t}] The server is fired up and ready to roll!
"""


def startup(start: datetime) -> str:
    """The startup lines, each record a few seconds after the previous one."""
    out = []
    clock = start
    for line in STARTUP.splitlines():
        clock += timedelta(seconds=7)
        t = clock.strftime("%Y-%m-%d %H:%M:%S")
        if line.startswith("{ranks:"):
            msg = line[len("{ranks:") : -1]
            out.extend(f"[{t} TP{r}] {msg}" for r in (7, 3, 0, 1, 2, 4, 6, 5))
        else:
            out.append(line.replace("{t}", t))
    return "\n".join(out) + "\n"


def serving_lines(rng: random.Random, start: datetime):
    now = start
    while True:
        now += timedelta(milliseconds=rng.randint(5, 400))
        t = now.strftime("%Y-%m-%d %H:%M:%S")
        kind = rng.random()
        if kind < 0.55:
            run = rng.randint(1, 256)
            yield (
                f"[{t} TP0] Decode batch, #running-req: {run}, #token: {run * rng.randint(300, 4000)}, "
                f"token usage: {rng.random():.2f}, cuda graph: True, gen throughput (token/s): "
                f"{rng.uniform(100, 9000):.2f}, #queue-req: {rng.randint(0, 40)}\n"
            )
        elif kind < 0.85:
            yield (
                f"[{t}] INFO:     10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}:"
                f"{rng.randint(1024, 65535)} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
            )
        else:
            yield (
                f"[{t} TP0] Prefill batch, #new-seq: {rng.randint(1, 8)}, #new-token: {rng.randint(10, 8000)}, "
                f"#cached-token: {rng.randint(0, 8000)}, token usage: {rng.random():.2f}, "
                f"#running-req: {rng.randint(0, 256)}, #queue-req: {rng.randint(0, 40)}\n"
            )


CRASH = """\
[{t} TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2103, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 771, in event_loop_overlap
    batch_result = self.run_batch(batch)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 139.81 GiB
[{t}] SIGQUIT received. signum=3, frame=<frame at 0x7f>. It usually means one child failed.
"""


def write_log(path: str, megabytes: int, seed: int = 1) -> int:
    """A startup, ``megabytes`` of serving lines (a random 8 MB pool, repeated), then a crash."""
    rng = random.Random(seed)
    start = datetime(2026, 2, 22, 23, 38, 50)
    pool: list[str] = []
    size = 0
    for line in serving_lines(rng, start + timedelta(minutes=12)):
        pool.append(line)
        size += len(line)
        if size >= 8 << 20:
            break
    block = "".join(pool).encode()
    with open(path, "wb") as out:
        written = out.write(startup(start).encode())
        while written < megabytes << 20:
            written += out.write(block)
        written += out.write(CRASH.replace("{t}", "2026-02-23 04:12:09").encode())
    return written


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--mb", type=int, default=1024)
    ns = parser.parse_args()
    print(write_log(ns.out, ns.mb))
