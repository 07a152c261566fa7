#!/usr/bin/env python3
"""Check and time exported submissions (harness export) the way the official runner does.

A PyTorch implementation of both problems, written from the spec (docs in the spec's mla_decode.md,
moe_mxfp4.md, evaluation.md): input generation (torch randn, per-tensor fp8 in bf16 arithmetic,
dynamic MXFP4 with the padded scale layout, router softmax top-k + shared expert, per-1x32 MXFP4
weights, 16x16 weight and scale shuffles) and references (MLA: fp32 attention over the bf16 inputs;
MoE: a4w4, activations MXFP4-quantized with the dynamic rule).

  export_check.py --problem mla_decode SUB.py [SUB.py ...] [--shapes test,benchmark] [--time VARIANTS]
  export_check.py --golden tests/data/golden      # the torch numerics and references against the
                                                  # official golden vectors
Prints one line per (shape, submission): verdict, mismatches, rel-L2, max abs, mean us; with --json,
writes them too. Exit 0 if every check passed, 1 otherwise.
"""
import argparse
import concurrent.futures
import importlib.util
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------- spec constants and shapes
MLA_HEADS, MLA_D, MLA_DV = 16, 576, 512
MLA_TEST = [(4, 1024, 4220), (32, 1024, 5412), (64, 8192, 1360), (256, 8192, 9826)]
MLA_BENCH = [(4, 1024, 4217), (4, 8192, 4220), (32, 1024, 5412), (32, 8192, 5415),
             (64, 1024, 1357), (64, 8192, 1360), (256, 1024, 9823), (256, 8192, 9826)]
# (d_hidden, d_expert, n_routed, k, n_shared, bs, seed)
MOE_TEST = [(4096, 1024, 256, 8, 1, 8, 9371), (7168, 2048, 32, 8, 1, 32, 2291), (4096, 1536, 64, 6, 1, 128, 81934)]
MOE_BENCH = [(7168, 256, 256, 8, 1, 16, 9371), (7168, 256, 256, 8, 1, 128, 2291), (7168, 256, 256, 8, 1, 512, 81934),
             (7168, 512, 32, 8, 1, 16, 2291), (7168, 512, 32, 8, 1, 128, 81934), (7168, 512, 32, 8, 1, 512, 81934),
             (7168, 2048, 32, 8, 1, 512, 81934)]
TOLERANCE = {"mla_decode": (0.1, 0.1, 0.05), "moe_mxfp4": (5e-2, 5e-2, 0.0)}  # rtol, atol, allowed fraction

E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
DEVICE = "cuda"  # where inputs are generated and golden checks run (--device)


def pad_to(x, a):
    return (x + a - 1) // a * a


# ---------------------------------------------------------------- numerics (bit-exact, spec rules)
def exp2_int(k):
    """Exact 2^k as float32 for an int32 tensor k in [-127, 127] (2^-127 is subnormal)."""
    k = k.to(torch.int32)
    normal = (k + 127).clamp(min=0) << 23
    sub = torch.full_like(k, 1 << 22)  # 2^-127, the only subnormal an e8m0 byte can give
    return torch.where(k >= -126, normal, sub).view(torch.float32)


def fp8_per_tensor(x_bf16):
    """Official per-tensor fp8: amax, scale and quotient all in bf16 arithmetic (numerics.hpp)."""
    finfo = torch.finfo(torch.float8_e4m3fn)
    amax = x_bf16.abs().amax().clamp(min=1e-12)
    scale = amax / finfo.max
    codes = (x_bf16 / scale).clamp(min=finfo.min, max=finfo.max).to(torch.float8_e4m3fn)
    return codes, scale.to(torch.float32).reshape(1)


def _block_amax(xb):
    a = xb.abs()
    return torch.where(torch.isnan(a), torch.zeros_like(a), a).amax(-1)


def _pack(codes):
    codes = codes.to(torch.uint8)
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def _e2m1_ties_away(v):
    a = v.abs()
    k = sum((a >= t).to(torch.uint8) for t in (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0))
    code = k | (torch.signbit(v).to(torch.uint8) << 3)
    return torch.where(torch.isnan(v), torch.full_like(code, 7), code)


def _e2m1_rne(v):
    a = v.abs()
    k = ((a > 0.25).to(torch.uint8) + (a >= 0.75).to(torch.uint8) + (a > 1.25).to(torch.uint8) +
         (a >= 1.75).to(torch.uint8) + (a > 2.5).to(torch.uint8) + (a >= 3.5).to(torch.uint8) +
         (a > 5.0).to(torch.uint8))
    code = k | (torch.signbit(v).to(torch.uint8) << 3)
    return torch.where(torch.isnan(v), torch.zeros_like(code), code)


def mxfp4_dynamic(x):
    """Dynamic rule (mla_decode.md): x [rows, cols] float32 -> packed [rows, cols/2], scales [rows, cols/32]."""
    rows, cols = x.shape
    xb = x.reshape(rows, cols // 32, 32)
    bits = _block_amax(xb).view(torch.int32).to(torch.int64)
    e = (((bits + 0x200000) & 0xFF800000) >> 23) & 0xFF
    scale_exp = (e - 129).clamp(-127, 127)
    v = xb * exp2_int(-scale_exp).unsqueeze(-1)
    packed = _pack(_e2m1_ties_away(v).reshape(rows, cols))
    return packed, (scale_exp + 127).to(torch.uint8)


def mxfp4_per1x32(x):
    """Weight rule (moe_mxfp4.md): scale e8m0(amax/4) rounded up on mantissa bit 22, codes RNE."""
    rows, cols = x.shape
    xb = x.reshape(rows, cols // 32, 32)
    bits = (_block_amax(xb) / 4.0).view(torch.int32).to(torch.int64)
    exp_field, frac = (bits >> 23) & 0xFF, bits & 0x7FFFFF
    up_normal = (exp_field != 0) & ((frac & 0x400000) != 0)
    up_sub = (exp_field == 0) & ((frac & 0x400000) != 0) & ((frac & 0x3FFFFF) != 0)
    byte = (exp_field + up_normal.to(torch.int64) + up_sub.to(torch.int64)).clamp(max=255)
    scale = torch.where(byte == 255, torch.full_like(byte, 0, dtype=torch.float32).fill_(float("nan")),
                        exp2_int(byte - 127))
    packed = _pack(_e2m1_rne(xb / scale.unsqueeze(-1)).reshape(rows, cols))
    return packed, byte.to(torch.uint8)


def pad_scales(s, rows_to=256, cols_to=8):
    out = torch.zeros((pad_to(s.shape[0], rows_to), pad_to(s.shape[1], cols_to)), dtype=torch.uint8, device=s.device)
    out[:s.shape[0], :s.shape[1]] = s
    return out


def mxfp4_dequant(packed, scales):
    """packed [rows, cols/2] + scales [>= rows, >= cols/32] (extra rows/columns ignored) -> float32."""
    rows, half = packed.shape
    lut = torch.tensor(E2M1_VALUES + [-v for v in E2M1_VALUES], device=packed.device)
    p = packed.to(torch.int64)
    vals = torch.stack([lut[p & 0xF], lut[p >> 4]], dim=-1).reshape(rows, half * 2)
    s = scales[:rows, :half * 2 // 32].to(torch.int32)
    sf = torch.where(s == 255, torch.full_like(s, 0, dtype=torch.float32).fill_(float("nan")), exp2_int(s - 127))
    return (vals.reshape(rows, -1, 32) * sf.unsqueeze(-1)).reshape(rows, half * 2)


def qdq_dynamic(x):
    """x float32 [rows, cols] -> its dynamic-MXFP4 quantization, dequantized."""
    packed, scales = mxfp4_dynamic(x)
    return mxfp4_dequant(packed, scales)


def shuffle_weight(w):
    """[E, N, Kbytes] uint8 -> 16x16 tiles: view [E, N/16, 16, Kb/32, 2, 16], permute to [.., N/16, Kb/32, 2, 16, 16]."""
    e, n, kb = w.shape
    return w.view(e, n // 16, 16, kb // 32, 2, 16).permute(0, 1, 3, 4, 2, 5).contiguous().view(e, n, kb)


def shuffle_scales(s):
    """[m, n] -> padded [pad256(m), pad8(n)], view (m/32, 2, 16, n/8, 2, 4), permute (0, 3, 5, 2, 4, 1)."""
    p = pad_scales(s)
    pm, pn = p.shape
    return p.view(pm // 32, 2, 16, pn // 8, 2, 4).permute(0, 3, 5, 2, 4, 1).contiguous().view(pm, pn)


# ---------------------------------------------------------------- mla_decode
def mla_generate(bs, kv_len, seed):
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    q = torch.randn((bs, MLA_HEADS, MLA_D), dtype=torch.bfloat16, device=DEVICE, generator=gen)
    kv = torch.randn((bs * kv_len, 1, MLA_D), dtype=torch.bfloat16, device=DEVICE, generator=gen)
    kv_fp8, kv_fp8_scale = fp8_per_tensor(kv)
    packed, scales = mxfp4_dynamic(kv.view(-1, MLA_D).float())
    kv_data = {"bf16": kv, "fp8": (kv_fp8, kv_fp8_scale),
               "mxfp4": (packed.view(bs * kv_len, 1, MLA_D // 2), pad_scales(scales))}
    qo_indptr = torch.arange(bs + 1, dtype=torch.int32, device=DEVICE)
    kv_indptr = torch.arange(bs + 1, dtype=torch.int32, device=DEVICE) * kv_len
    config = {"batch_size": bs, "num_heads": MLA_HEADS, "num_kv_heads": 1, "qk_head_dim": MLA_D,
              "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": MLA_DV, "q_seq_len": 1,
              "kv_seq_len": kv_len, "sm_scale": 1.0 / math.sqrt(MLA_D)}
    return (q, kv_data, qo_indptr, kv_indptr, config)


def mla_reference(data):
    """fp32 attention over the bf16 q and KV; bf16 output."""
    q, kv_data, _, _, config = data
    bs, kv_len = config["batch_size"], config["kv_seq_len"]
    qf = q.float().view(bs, MLA_HEADS, MLA_D)
    kvf = kv_data["bf16"].float().view(bs, kv_len, MLA_D)
    p = torch.softmax(torch.bmm(qf, kvf.transpose(1, 2)) * config["sm_scale"], dim=-1)
    return torch.bmm(p, kvf[:, :, :MLA_DV]).to(torch.bfloat16)


# ---------------------------------------------------------------- moe_mxfp4
def moe_generate(d_hidden, d_expert, n_routed, k, n_shared, bs, seed):
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    e_total, m = n_routed + n_shared, bs
    hidden = torch.randn((m, d_hidden), dtype=torch.bfloat16, device=DEVICE, generator=gen)
    router = torch.randn((n_routed, d_hidden), dtype=torch.bfloat16, device=DEVICE, generator=gen) / math.sqrt(d_hidden)
    scores = F.linear(hidden, router).softmax(dim=-1)
    w_routed, ids_routed = torch.topk(scores, k=k, dim=-1, sorted=False)
    shared_ids = torch.arange(n_routed, e_total, dtype=torch.int32, device=DEVICE).unsqueeze(0).expand(m, -1)
    topk_ids = torch.cat([ids_routed.to(torch.int32), shared_ids], dim=-1).contiguous()
    topk_weights = torch.cat([w_routed.to(torch.float32),
                              torch.ones((m, n_shared), dtype=torch.float32, device=DEVICE)], dim=-1).contiguous()
    gu_q, gu_s, dn_q, dn_s = [], [], [], []
    for _ in range(e_total):  # one expert at a time keeps the float32 temporaries small
        gu = torch.randn((2 * d_expert, d_hidden), dtype=torch.bfloat16, device=DEVICE, generator=gen) / math.sqrt(d_hidden)
        dn = torch.randn((d_hidden, d_expert), dtype=torch.bfloat16, device=DEVICE, generator=gen) / math.sqrt(d_expert)
        for (q, s), qs, ss in ((mxfp4_per1x32(gu.float()), gu_q, gu_s), (mxfp4_per1x32(dn.float()), dn_q, dn_s)):
            qs.append(q)
            ss.append(s)
    gate_up, down = torch.stack(gu_q), torch.stack(dn_q)
    gate_up_scale, down_scale = torch.cat(gu_s), torch.cat(dn_s)
    config = {"d_hidden": d_hidden, "d_expert": d_expert, "d_hidden_pad": pad_to(d_hidden, 256),
              "d_expert_pad": pad_to(d_expert, 256), "n_routed_experts": n_routed, "n_shared_experts": n_shared,
              "n_experts_per_token": k, "total_top_k": k + n_shared, "bs": m}
    return (hidden, gate_up, down, gate_up_scale, down_scale, shuffle_weight(gate_up), shuffle_weight(down),
            shuffle_scales(gate_up_scale), shuffle_scales(down_scale), topk_weights, topk_ids, config)


def moe_reference(data):
    """a4w4: x and the bf16-rounded SwiGLU output MXFP4-quantized (dynamic rule), fp32 math, bf16 out."""
    hidden, gate_up, down, gate_up_scale, down_scale = data[:5]
    topk_weights, topk_ids, config = data[9], data[10], data[11]
    d_hidden, d_expert = config["d_hidden"], config["d_expert"]
    xq = qdq_dynamic(hidden.float())
    out = torch.zeros((hidden.shape[0], d_hidden), dtype=torch.float32, device=hidden.device)
    for e in torch.unique(topk_ids).tolist():
        rows, slots = (topk_ids == e).nonzero(as_tuple=True)
        w_gu = mxfp4_dequant(gate_up[e], gate_up_scale[e * 2 * d_expert:(e + 1) * 2 * d_expert])
        h = xq[rows] @ w_gu.T
        a = (F.silu(h[:, :d_expert]) * h[:, d_expert:]).to(torch.bfloat16).float()
        w_dn = mxfp4_dequant(down[e], down_scale[e * d_hidden:(e + 1) * d_hidden])
        y = qdq_dynamic(a) @ w_dn.T
        out.index_add_(0, rows, y * topk_weights[rows, slots].unsqueeze(1))
    return out.to(torch.bfloat16)


PROBLEMS = {
    "mla_decode": (mla_generate, mla_reference, MLA_TEST, MLA_BENCH),
    "moe_mxfp4": (moe_generate, moe_reference, MOE_TEST, MOE_BENCH),
}


# ---------------------------------------------------------------- checking and timing
def compare(out, ref, problem):
    rtol, atol, allowed = TOLERANCE[problem]
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return {"ok": False, "reason": f"output {tuple(out.shape)} {out.dtype}, expected {tuple(ref.shape)} {ref.dtype}"}
    o, r = out.float(), ref.float()
    bad = ~((o - r).abs() <= atol + rtol * r.abs())  # NaN compares false: a mismatch
    mism = int(bad.sum())
    rel_l2 = float(torch.linalg.vector_norm(torch.nan_to_num(o - r, nan=1e30)) / torch.linalg.vector_norm(r))
    max_abs = float(torch.nan_to_num((o - r).abs(), nan=float("inf")).max())
    ok = mism <= allowed * out.numel()
    return {"ok": ok, "mismatches": mism, "elements": out.numel(), "rel_l2": rel_l2, "max_abs": max_abs,
            "reason": "" if ok else f"{mism} of {out.numel()} elements outside rtol/atol"}


class Timer:
    """Official method: cache flush, then a GPU-side wait so the call is queued before the start event."""

    def __init__(self, flush_bytes=1 << 30, spin_ms=2.0):
        self.flush = torch.empty(flush_bytes // 4, dtype=torch.float32, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.spin_cycles = int(spin_ms * 1e-3 * 2.0e9)  # ~2 GHz: a few ms hide the host's launch overhead

    def once(self, fn, data):
        torch.cuda.synchronize()
        self.flush.zero_()
        torch.cuda._sleep(self.spin_cycles)
        self.start.record()
        fn(data)
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) * 1e3  # us

    def measure(self, fn, data, max_runs, max_s):
        """Official stopping rule (min 3 runs, std error < 0.1% of the mean), capped by runs and seconds."""
        times, t0 = [], time.perf_counter()
        while len(times) < max_runs:
            times.append(self.once(fn, data))
            n = len(times)
            if n >= 3:
                mean = sum(times) / n
                std = math.sqrt(sum((t - mean) ** 2 for t in times) / (n - 1))
                if std / math.sqrt(n) < 1e-3 * mean or time.perf_counter() - t0 > max_s:
                    break
        mean = sum(times) / len(times)
        return {"runs": len(times), "mean_us": mean, "best_us": min(times)}


def load_submission(path, index):
    spec = importlib.util.spec_from_file_location(f"harness_export_sub{index}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # compiles the extension (the official compile step)
    return mod


def shape_label(problem, shape):
    if problem == "mla_decode":
        return f"bs={shape[0]} kv={shape[1]} seed={shape[2]}"
    return f"dh={shape[0]} de={shape[1]} E={shape[2]}+{shape[4]} k={shape[3]} bs={shape[5]} seed={shape[6]}"


def named_inputs(problem, data):
    """The input tensors by the harness's names (harness run --inputs reads <name>.bin)."""
    if problem == "mla_decode":
        q, kv, qo_indptr, kv_indptr, _ = data
        return {"q": q, "kv_bf16": kv["bf16"], "kv_fp8": kv["fp8"][0], "kv_fp8_scale": kv["fp8"][1],
                "kv_mxfp4": kv["mxfp4"][0], "kv_mxfp4_scale": kv["mxfp4"][1], "qo_indptr": qo_indptr,
                "kv_indptr": kv_indptr}
    names = ("hidden_states", "gate_up_weight", "down_weight", "gate_up_weight_scale", "down_weight_scale",
             "gate_up_weight_shuffled", "down_weight_shuffled", "gate_up_weight_scale_shuffled",
             "down_weight_scale_shuffled", "topk_weights", "topk_ids")
    return dict(zip(names, data[:len(names)]))


def dump_inputs(folder, problem, data):
    """Raw little-endian bytes of every input, official layouts, for `harness run --inputs folder`."""
    os.makedirs(folder, exist_ok=True)
    for name, t in named_inputs(problem, data).items():
        t.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tofile(os.path.join(folder, name + ".bin"))


def load_all(paths):
    """The official compile step, for every file at once: load_inline runs the compilers in
    subprocesses, so threads overlap them (one file takes ~40 s; one after another, a dozen files
    would outlast a device call). Returns (name, module or None, error or None) per path."""
    def load(i, path):
        t0 = time.perf_counter()
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            mod, err = load_submission(path, i), None
        except Exception as e:  # a build failure fails this submission only
            mod, err = None, f"load failed: {type(e).__name__}: {str(e).splitlines()[-1] if str(e) else ''}"
        print(f"# loaded {name} in {time.perf_counter() - t0:.1f} s{'' if mod else ' (FAILED)'}", flush=True)
        return name, mod, err

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(paths))) as pool:
        return list(pool.map(load, range(len(paths)), paths))


def problem_of(path):
    """harness export names files <problem>__<variant>.py."""
    return os.path.basename(path).split("__", 1)[0]


def run_checks(args, problem, subs):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    generate, reference, tests, benches = PROBLEMS[problem]
    time_only = set(args.time.split(",")) if args.time else None
    timer = Timer(spin_ms=args.spin_ms)
    results, all_ok = [], True

    def indices(spec):  # "1,3" or "mla_decode=1,3;moe_mxfp4=0": this problem's part ("" if not named)
        if "=" in spec:
            spec = dict(part.split("=", 1) for part in spec.split(";") if part).get(problem, "")
        return [int(i) for i in spec.split(",")] if spec else []

    pick = lambda shapes, spec: [shapes[i] for i in indices(spec)] or shapes  # nothing named: all
    sets = [("test", s) for s in pick(tests, args.test_index)] if "test" in args.shapes else []
    sets += [("benchmark", s) for s in pick(benches, args.bench_index)] if "benchmark" in args.shapes else []
    print(f"{'submission':14s} {'mode':9s} {'shape':44s} {'verdict':7s} {'mism':>7s} {'relL2':>9s} "
          f"{'maxabs':>9s} {'runs':>5s} {'mean us':>10s}", flush=True)
    dump = [benches[i] for i in indices(args.dump_index)] if args.dump_inputs else []  # nothing named: none
    for mode, shape in sets:
        data = generate(*shape)
        if mode == "benchmark" and shape in dump:
            folder = os.path.join(args.dump_inputs, f"{problem}_benchmark_{benches.index(shape)}")
            dump_inputs(folder, problem, data)
            print(f"# inputs of {shape_label(problem, shape)} written to {folder}", flush=True)
        ref = reference(data)
        for name, mod, err in subs:
            row = {"submission": name, "mode": mode, "shape": shape_label(problem, shape),
                   "index": (tests if mode == "test" else benches).index(shape)}
            if err:
                row.update(ok=False, reason=err)
            else:
                try:
                    out = mod.custom_kernel(data)  # untimed first call, checked (absorbs first-call setup)
                    torch.cuda.synchronize()
                    row.update(compare(out, ref, problem))
                    if mode == "benchmark" and row["ok"] and (time_only is None or name in time_only):
                        row.update(timer.measure(mod.custom_kernel, data, args.max_runs, args.max_s))
                except Exception as e:
                    row.update(ok=False, reason=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            all_ok &= row["ok"]
            results.append(row)
            mean = row.get("mean_us")
            print(f"{name:14s} {mode:9s} {row['shape'][:44]:44s} {'pass' if row['ok'] else 'FAIL':7s} "
                  f"{row.get('mismatches', '-')!s:>7s} {row.get('rel_l2', float('nan')):9.2e} "
                  f"{row.get('max_abs', float('nan')):9.2e} {row.get('runs', '-')!s:>5s} "
                  f"{'-' if mean is None else f'{mean:10.1f}':>10s}  {row.get('reason', '')}", flush=True)
        del data, ref
        torch.cuda.empty_cache()
        if args.json:  # after every shape: a run cut short keeps what it measured
            path = args.json.replace("{problem}", problem)
            with open(path + ".tmp", "w") as f:
                json.dump({"problem": problem, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                           "results": results}, f, indent=1)
            os.replace(path + ".tmp", path)
    return 0 if all_ok else 1


# ---------------------------------------------------------------- golden vectors (official code's output)
def _load_tensor(folder, meta):
    raw = open(os.path.join(folder, meta["file"]), "rb").read()
    dtype = {"bf16": torch.int16, "f32": torch.float32, "i32": torch.int32}.get(meta["dtype"], torch.uint8)
    t = torch.frombuffer(bytearray(raw), dtype=dtype).clone()
    if meta["dtype"] == "bf16":
        t = t.view(torch.bfloat16)
    shape = list(meta["shape"])
    return t.reshape(shape).to(DEVICE)


def _case(folder):
    man = json.load(open(os.path.join(folder, "manifest.json")))
    return man["meta"], {k: _load_tensor(folder, v) for k, v in man["tensors"].items()}


def _same(a, b):
    return a.shape == b.shape and bool((a.view(torch.uint8) == b.view(torch.uint8)).all())


def golden_checks(root):
    torch.backends.cuda.matmul.allow_tf32 = False
    device = DEVICE
    checks = []

    def record(name, ok, detail=""):
        checks.append(ok)
        print(f"{'pass' if ok else 'FAIL'}  {name}  {detail}", flush=True)

    num = json.load(open(os.path.join(root, "numerics.json")))
    x = torch.tensor(num["mxfp4_rows_input_bf16_bits"], dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    x = x.to(device).float()
    flat = lambda key: torch.tensor(num[key], dtype=torch.int64).reshape(-1).to(torch.uint8).to(device)
    p, s = mxfp4_dynamic(x)
    record("numerics mxfp4 dynamic packed", bool((p.reshape(-1) == flat("mxfp4_dynamic_packed")).all()))
    record("numerics mxfp4 dynamic scales (padded)", bool((pad_scales(s).reshape(-1) == flat("mxfp4_dynamic_scales_padded")).all()))
    p, s = mxfp4_per1x32(x)
    record("numerics mxfp4 per1x32 packed", bool((p.reshape(-1) == flat("mxfp4_per1x32_packed")).all()))
    gs = flat("mxfp4_per1x32_scales")
    record("numerics mxfp4 per1x32 scales", bool((s.reshape(-1)[:gs.numel()] == gs).all()) and s.numel() == gs.numel(),
           f"({s.numel()} vs {gs.numel()} bytes)")

    for case in sorted(os.listdir(root)):
        folder = os.path.join(root, case)
        if not os.path.isdir(folder):
            continue
        meta, t = _case(folder)
        if case.startswith("mla"):
            kv = t["kv_bf16"]
            if hasattr(torch, "float8_e4m3fn"):
                codes, scale = fp8_per_tensor(kv)
                record(f"{case} kv_fp8 + scale", _same(codes, t["kv_fp8"]) and _same(scale, t["kv_fp8_scale"]))
            else:
                print(f"skip  {case} kv_fp8 (torch {torch.__version__} has no float8_e4m3fn)")
            p, s = mxfp4_dynamic(kv.view(-1, MLA_D).float())
            record(f"{case} kv_mxfp4 + padded scales",
                   _same(p.view(t["kv_mxfp4"].shape), t["kv_mxfp4"]) and _same(pad_scales(s), t["kv_mxfp4_scale"]))
            bs, kv_len = meta["batch_size"], meta["kv_seq_len"]
            data = (t["q"], {"bf16": kv}, t["qo_indptr"], t["kv_indptr"],
                    {"batch_size": bs, "kv_seq_len": kv_len, "sm_scale": meta["sm_scale"]})
            ref = mla_reference(data).float().view(-1)
            exact = t["out_exact_bf16_inputs"].view(-1)
            rel = float(torch.linalg.vector_norm(ref - exact) / torch.linalg.vector_norm(exact))
            record(f"{case} fp32 attention vs float64 (bf16 output)", rel < 4e-3, f"rel-L2 {rel:.2e}")
        elif case.startswith("moe"):
            cfg = meta["config"]
            for raw, shuf in (("gate_up_weight", "gate_up_weight_shuffled"), ("down_weight", "down_weight_shuffled")):
                record(f"{case} {shuf}", _same(shuffle_weight(t[raw]), t[shuf]))
            for raw in ("gate_up_weight_scale", "down_weight_scale"):
                got = shuffle_scales(t[raw])
                want = t[raw + "_shuffled"]
                record(f"{case} {raw}_shuffled", _same(got.reshape(-1)[:want.numel()].reshape(want.shape), want))
            names = ["hidden_states", "gate_up_weight", "down_weight", "gate_up_weight_scale", "down_weight_scale",
                     "gate_up_weight_shuffled", "down_weight_shuffled", "gate_up_weight_scale_shuffled",
                     "down_weight_scale_shuffled", "topk_weights", "topk_ids"]
            data = tuple(t[n] for n in names) + (cfg,)
            ref = moe_reference(data)
            res = compare(ref, t["out_reference"], "moe_mxfp4")
            equal = int((ref.view(torch.int16) == t["out_reference"].view(torch.int16)).sum())
            record(f"{case} a4w4 reference output", res["ok"] and res["rel_l2"] < 1e-2,
                   f"{equal}/{ref.numel()} bit-equal, rel-L2 {res['rel_l2']:.2e}, max abs {res['max_abs']:.2e}")
    print(f"golden: {sum(checks)} passed, {len(checks) - sum(checks)} failed", flush=True)
    return 0 if all(checks) else 1


def smoke():
    """Tiny inputs of both problems through generation and reference: layouts, dtypes, invariants."""
    torch.backends.cuda.matmul.allow_tf32 = False
    checks = []

    def record(name, ok, detail=""):
        checks.append(bool(ok))
        print(f"{'pass' if ok else 'FAIL'}  {name}  {detail}", flush=True)

    has_fp8 = hasattr(torch, "float8_e4m3fn")
    global fp8_per_tensor
    real_fp8 = fp8_per_tensor
    if not has_fp8:  # old torch: a stand-in so the rest of the generator runs
        fp8_per_tensor = lambda x: (torch.zeros(x.shape, dtype=torch.uint8, device=x.device),
                                    torch.ones(1, device=x.device))
    try:
        data = mla_generate(3, 96, 7)
    finally:
        fp8_per_tensor = real_fp8
    q, kv_data, qo, kvp, cfg = data
    kv = kv_data["bf16"]
    record("mla shapes and dtypes", q.shape == (3, 16, 576) and kv.shape == (288, 1, 576) and
           kv_data["mxfp4"][0].shape == (288, 1, 288) and kv_data["mxfp4"][1].shape == (512, 24) and
           kv_data["fp8"][1].shape == (1,) and qo.dtype == torch.int32 and int(kvp[-1]) == 288)
    deq = mxfp4_dequant(kv_data["mxfp4"][0].view(288, 288), kv_data["mxfp4"][1]).view(288, 1, 576)
    rel = float(torch.linalg.vector_norm(deq - kv.float()) / torch.linalg.vector_norm(kv.float()))
    record("mla MXFP4 KV dequantizes close to the bf16 KV", 0.02 < rel < 0.2, f"rel-L2 {rel:.3f}")
    ref = mla_reference(data).double()
    qd, kd = q.double(), kv.double().view(3, 96, 576)
    p = torch.softmax(torch.einsum("bhd,btd->bht", qd, kd) * cfg["sm_scale"], dim=-1)
    exact = torch.einsum("bht,btd->bhd", p, kd[:, :, :512])
    rel = float(torch.linalg.vector_norm(ref - exact) / torch.linalg.vector_norm(exact))
    record("mla fp32 reference vs float64", rel < 4e-3, f"rel-L2 {rel:.2e}")

    data = moe_generate(256, 256, 6, 3, 1, 9, 11)
    hidden, gu, dn, gus, dns, gush, dnsh, gussh, dnssh, tw, ti, cfg = data
    record("moe shapes and dtypes", hidden.shape == (9, 256) and gu.shape == (7, 512, 128) and
           dn.shape == (7, 256, 128) and gus.shape == (7 * 512, 8) and dns.shape == (7 * 256, 8) and
           gussh.shape == (3584, 8) and tw.shape == (9, 4) and ti.dtype == torch.int32 and
           bool((ti[:, -1] == 6).all()) and bool((tw[:, -1] == 1).all()) and float(tw[:, :3].sum(-1).max()) < 1)
    record("moe routed ids distinct per token", all(len(set(r[:3])) == 3 for r in ti.tolist()))
    inv = gush.view(7, 32, 4, 2, 16, 16).permute(0, 1, 4, 2, 3, 5).reshape(7, 512, 128)
    record("moe weight shuffle is a permutation of the raw bytes", bool((inv == gu).all()))
    out = moe_reference(data)
    record("moe reference finite and not zero", bool(torch.isfinite(out.float()).all()) and
           float(out.float().abs().mean()) > 1e-3, f"mean |out| {float(out.float().abs().mean()):.3f}")
    print(f"smoke: {sum(checks)} passed, {len(checks) - sum(checks)} failed", flush=True)
    return 0 if all(checks) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("submissions", nargs="*", help="exported submission files")
    ap.add_argument("--problem", choices=sorted(PROBLEMS),
                    help="default: from each file's name, <problem>__<variant>.py (several problems at once)")
    ap.add_argument("--shapes", default="test,benchmark", help="test, benchmark or both (comma-separated)")
    ap.add_argument("--test-index", default="", help="comma-separated test shape indices (default: all); "
                    "problem=indices;problem=indices for several problems")
    ap.add_argument("--bench-index", default="", help="comma-separated benchmark shape indices (default: all); "
                    "same forms as --test-index")
    ap.add_argument("--time", default="", help="comma-separated submission names to time (default: all)")
    ap.add_argument("--max-runs", type=int, default=200)
    ap.add_argument("--max-s", type=float, default=2.0, help="seconds of timed calls per shape at most")
    ap.add_argument("--spin-ms", type=float, default=2.0)
    ap.add_argument("--json", default="")
    ap.add_argument("--dump-inputs", default="", metavar="DIR",
                    help="write the inputs of the --dump-index benchmark shapes to DIR/<problem>_benchmark_<i>/<tensor>.bin")
    ap.add_argument("--dump-index", default="", help="benchmark shapes to dump, same forms as --test-index")
    ap.add_argument("--golden", default="", help="check the torch reference against this golden folder instead")
    ap.add_argument("--device", default="cuda", help="device of --golden and --smoke (cpu works too)")
    ap.add_argument("--smoke", action="store_true",
                    help="generate tiny inputs of both problems and check the references (no submission)")
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device
    if args.golden:
        return golden_checks(args.golden)
    if args.smoke:
        return smoke()
    if not args.submissions:
        ap.error("at least one submission is required (or --golden / --smoke)")
    problems = sorted({args.problem or problem_of(p) for p in args.submissions})
    unknown = [p for p in problems if p not in PROBLEMS]
    if unknown:
        ap.error(f"unknown problem {unknown[0]} (name files <problem>__<variant>.py or give --problem)")
    if len(problems) > 1 and args.json and "{problem}" not in args.json:
        ap.error("--json needs a {problem} placeholder when files of several problems are given")
    loaded = dict(zip(args.submissions, load_all(args.submissions)))
    rc = 0
    for problem in problems:
        subs = [loaded[p] for p in args.submissions if (args.problem or problem_of(p)) == problem]
        rc |= run_checks(args, problem, subs)
    return rc


if __name__ == "__main__":
    sys.exit(main())
