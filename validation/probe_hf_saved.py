#!/usr/bin/env python3
"""Saved-for-backward bytes of small Hugging Face models (random weights), as nnmem counts
them: every storage autograd keeps that is not a parameter (the ids and the target count).
   /work/venv213/bin/python validation/probe_hf_saved.py gpt2|llama|bert|vit sdpa|eager
Compare with `nnmem estimate examples/<model>.yaml --device cpu --batch 2 --format json`
(totals.saved_bytes) under the same --set values (validation/README.md lists them)."""
import sys, torch, torch.nn.functional as F, transformers as T
torch.manual_seed(0); torch.set_num_threads(1)
which, impl = sys.argv[1], sys.argv[2]
B, S, V = 2, 32, 1000
if which == "gpt2":
    m = T.GPT2LMHeadModel(T.GPT2Config(vocab_size=V, n_positions=64, n_embd=64, n_layer=2, n_head=4, attn_implementation=impl))
elif which == "llama":
    m = T.LlamaForCausalLM(T.LlamaConfig(vocab_size=V, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, attn_implementation=impl))
elif which == "bert":
    m = T.BertModel(T.BertConfig(vocab_size=V, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=64, attn_implementation=impl))
elif which == "vit":
    m = T.ViTForImageClassification(T.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, image_size=32, patch_size=8, num_labels=10, attn_implementation=impl))
m.train()
params = {p.untyped_storage().data_ptr() for p in m.parameters()}
seen = {}
def pack(t):
    st = t.untyped_storage()
    if st.data_ptr() not in params: seen[st.data_ptr()] = st.nbytes()
    return t
if which == "vit":
    x = torch.randn(B, 3, 32, 32); y = torch.randint(0, 10, (B,))
else:
    x = torch.randint(0, V, (B, S)); y = torch.randint(0, V, (B * S,))
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    if which in ("gpt2", "llama"):
        loss = F.cross_entropy(m(input_ids=x).logits.view(-1, V), y)
    elif which == "bert":
        loss = m(input_ids=x).pooler_output.mean()
    else:
        loss = F.cross_entropy(m(pixel_values=x).logits, y)
print(which, impl, "params", sum(p.numel() for p in m.parameters()), "saved", sum(seen.values()))
