"""Transformers: Hugging Face models from small configs with random weights, PyTorch's own
Transformer layers and a masked MultiheadAttention (networks.py's NETWORKS)."""

import torch
import torch.nn as nn


# Hugging Face transformers models from small configs with random weights (no download),
# torch 2.x only; `transformers` is imported when one is built. Their specs are the examples'
# with the --set values in validation/specs.json.
HF_VOCAB, HF_SEQ = 1000, 32


def hf_model(kind, impl):
    def build():
        import transformers as T
        if kind == "gpt2":
            return T.GPT2LMHeadModel(T.GPT2Config(vocab_size=HF_VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                                                  attn_implementation=impl))
        if kind == "llama":
            return T.LlamaForCausalLM(T.LlamaConfig(vocab_size=HF_VOCAB, hidden_size=64, intermediate_size=128,
                                                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                    max_position_embeddings=64, attn_implementation=impl))
        if kind == "bert_pretraining":
            return T.BertForPreTraining(T.BertConfig(vocab_size=HF_VOCAB, hidden_size=64, num_hidden_layers=2,
                                                     num_attention_heads=4, intermediate_size=128,
                                                     max_position_embeddings=64, attn_implementation=impl))
        if kind == "mixtral":  # experts_implementation "grouped_mm", a model's default on the CPU
            return T.MixtralForCausalLM(T.MixtralConfig(vocab_size=HF_VOCAB, hidden_size=64, intermediate_size=128,
                                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                        num_local_experts=4, num_experts_per_tok=2,
                                                        max_position_embeddings=64, attn_implementation=impl))
        if kind == "roberta":  # position ids from padding_idx + 1: 66 positions for 32 + 2
            return T.RobertaModel(T.RobertaConfig(vocab_size=HF_VOCAB, hidden_size=64, num_hidden_layers=2,
                                                  num_attention_heads=4, intermediate_size=128, max_position_embeddings=66,
                                                  attn_implementation=impl))
        if kind == "t5":  # relu feed-forward, 2 + 2 layers, the relative bias's 32 buckets
            return T.T5ForConditionalGeneration(T.T5Config(vocab_size=HF_VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                                           num_heads=4, decoder_start_token_id=0,
                                                           attn_implementation=impl))
        if kind == "bert":
            return T.BertModel(T.BertConfig(vocab_size=HF_VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                            intermediate_size=128, max_position_embeddings=64, attn_implementation=impl))
        return T.ViTForImageClassification(T.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                       intermediate_size=128, image_size=32, patch_size=8, num_labels=10,
                                                       attn_implementation=impl))
    return build


def lm_logits(model, ids):  # ForCausalLMLoss's view: [B * T, vocab]
    return model(input_ids=ids).logits.view(-1, HF_VOCAB)


GPT2_VOCAB = 50257


def gpt2_124m():
    """GPT-2 at its published size (GPT2Config's defaults: 124,439,808 parameters, lm_head tied
    to wte), random weights."""
    import transformers as T
    return T.GPT2LMHeadModel(T.GPT2Config(attn_implementation="sdpa"))


def gpt2_124m_logits(model, ids):
    return model(input_ids=ids).logits.view(-1, GPT2_VOCAB)


T5_VOCAB = 32128


def t5_small():
    """t5-small at its published size (T5Config's defaults: 60,506,624 parameters, lm_head tied to
    the shared embedding), random weights."""
    import transformers as T
    return T.T5ForConditionalGeneration(T.T5Config(decoder_start_token_id=0, attn_implementation="sdpa"))


def t5_small_loss(model, ids, targets=None):  # t5_loss at t5-small's vocabulary
    if targets is None:
        return model(input_ids=ids, decoder_input_ids=model._shift_right(ids), use_cache=False).logits.view(-1, T5_VOCAB)
    return model(input_ids=ids, labels=targets[0].view(ids.shape[0], -1), use_cache=False)


def bert_pooled(model, ids):
    return model(input_ids=ids).pooler_output


def bert_pretraining(model, ids, targets=None):
    """BertForPreTraining's two outputs (the MLM scores viewed as its loss views them); with
    the targets, its own output: HF's loss is masked_lm_loss + next_sentence_loss."""
    if targets is None:
        out = model(input_ids=ids)
        return out.prediction_logits.view(-1, HF_VOCAB), out.seq_relationship_logits
    return model(input_ids=ids, labels=targets[0].view(ids.shape[0], -1), next_sentence_label=targets[1])


def t5_loss(model, ids, targets=None):
    """T5ForConditionalGeneration with use_cache=False (examples/t5.yaml says why). With the targets,
    its own output: the labels [B, T], shifted right into the decoder's ids inside forward, and
    CrossEntropyLoss(ignore_index=-100) over the logits; without, the logits for the shifted ids."""
    if targets is None:
        return model(input_ids=ids, decoder_input_ids=model._shift_right(ids), use_cache=False).logits.view(-1, HF_VOCAB)
    return model(input_ids=ids, labels=targets[0].view(ids.shape[0], -1), use_cache=False)


def vit_logits(model, pixels):
    return model(pixel_values=pixels).logits


class TorchEncoder(nn.Module):
    """PyTorch's own nn.TransformerEncoder: two nn.TransformerEncoderLayer(32, 4, 64, dropout
    0.1, batch_first) in a row; norm_first=True also with GELU and a final LayerNorm."""

    def __init__(self, norm_first=False):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.1, batch_first=True,
                                           norm_first=norm_first, activation="gelu" if norm_first else "relu")
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(32) if norm_first else None,
                                             enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class TorchDecoder(nn.Module):
    """One nn.TransformerDecoderLayer(32, 4, 64, batch_first), its memory the input itself."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(32, 4, dim_feedforward=64, dropout=0.1, batch_first=True)

    def forward(self, x):
        return self.layer(x, x)


class MaskedAttention(nn.Module):
    """nn.MultiheadAttention(32, 4, batch_first) self-attention with a causal bool attn_mask
    [L, L] and a bool key_padding_mask [N, L] (the last two positions padded), both made in
    forward, need_weights=False; then a Linear."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.out = nn.Linear(32, 32)

    def forward(self, x):
        n, length = x.shape[0], x.shape[1]
        mask = torch.ones(length, length, dtype=torch.bool).triu(1)
        padding = torch.zeros(n, length, dtype=torch.bool)
        padding[:, -2:] = True
        y, _ = self.attn(x, x, x, key_padding_mask=padding, attn_mask=mask, need_weights=False)
        return self.out(y)
