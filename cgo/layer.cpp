// layer.cpp: the decoder layer (layer.h), and the pieces only it uses:
// rotary embedding, the per-head norms, the projections of either weight
// layout and SwiGLU.
#include "layer.h"

#include "deltanet.h"
#include "gemma4.h"
#include "mamba2.h"
#include "moe.h"

namespace ar {

at::Tensor rms_norm(const at::Tensor &x, const at::Tensor &w, double eps) {
  at::Tensor xf = x.to(acc_type(x.scalar_type()));
  at::Tensor r = at::rsqrt(xf.pow(2).mean(-1, true) + eps);
  return w * (xf * r).to(x.scalar_type());
}

at::Tensor norm(const ar_model_s &m, const at::Tensor &x, const at::Tensor &w) {
  if (m.cfg.norm_offset == 0 && m.cfg.nemotron == 0) return rms_norm(x, w, m.cfg.rms_eps);
  const at::ScalarType ct = acc_type(x.scalar_type());
  at::Tensor xf = x.to(ct);
  at::Tensor r = at::rsqrt(xf.pow(2).mean(-1, true) + m.cfg.rms_eps);
  return (xf * r * (m.cfg.nemotron != 0 ? w.to(ct) : w.to(ct) + 1)).to(x.scalar_type());
}

at::Tensor decode_product(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b) {
  int64_t rows = x.numel() / x.size(-1);
  if (!x.is_cpu() || rows > 16) return linear(x, w, b);
  at::Tensor x2 = x.reshape({rows, x.size(-1)});
  at::Tensor y = b.defined() ? at::addmm(b.unsqueeze(1), w, x2.t()) : at::mm(w, x2.t());
  auto shape = x.sizes().vec();
  shape.back() = w.size(0);
  return y.t().reshape(shape);
}

namespace {

// apply_rope rotates each head of x [..,hd] by the tables cos, sin
// [..,rd], with HF's rotate_half pairing (dims j and j + rd/2) over the
// first rd dimensions; the rest pass unchanged (partial RoPE).
at::Tensor apply_rope(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin) {
  const int64_t rd = cos.size(-1), half = rd / 2;
  at::Tensor xr = rd == x.size(-1) ? x : x.narrow(-1, 0, rd);
  at::Tensor x1 = xr.narrow(-1, 0, half), x2 = xr.narrow(-1, half, half);
  at::Tensor rotated = at::cat({-x2, x1}, -1);  // rotate_half
  at::Tensor y = xr * cos + rotated * sin;
  return rd == x.size(-1) ? y : at::cat({y, x.narrow(-1, rd, x.size(-1) - rd)}, -1);
}

// project_one is target's projection of x (no bias: o_proj, down_proj).
at::Tensor project_one(const LayerWeights &w, LoraTarget target, const at::Tensor &x) {
  if (w.fused == nullptr) return w.m.project(w.l, target, x, at::Tensor());
  return decode_product(x, w.l.*kLoraSites[target].weight, at::Tensor());
}

// project_group is the projections of x by group g's parts, in the
// parts' order: from the fused copy, one product split by columns (the
// parts' widths: their weights' rows); from the model's tensors, one
// product each, computed in g.order. A part the layer lacks (a Gemma 4
// layer's k_proj or v_proj) is undefined.
std::vector<at::Tensor> project_group(const LayerWeights &w, const Group &g, const at::Tensor &x) {
  std::vector<at::Tensor> out(g.n);
  if (w.fused == nullptr) {
    for (int j = 0; j < g.n; j++) {
      const int i = g.order[j];
      const Group::Part &p = g.parts[i];
      if (!p.weight(w.l).defined()) continue;
      out[i] = w.m.project(w.l, p.target, x, p.bias(w.l) != nullptr ? *p.bias(w.l) : at::Tensor());
    }
    return out;
  }
  at::Tensor y = decode_product(x, w.fused->*g.w, g.b != nullptr ? w.fused->*g.b : at::Tensor());
  int64_t col = 0;
  for (int i = 0; i < g.n; i++) {
    if (!g.parts[i].weight(w.l).defined()) continue;
    const int64_t width = g.parts[i].weight(w.l).size(0);
    out[i] = y.narrow(-1, col, width);
    col += width;
  }
  return out;
}

// heads views a projection [B,T,n*hd] as n heads [B,n,T,hd].
at::Tensor heads(const at::Tensor &y, int64_t n, int64_t hd) {
  return y.view({y.size(0), y.size(1), n, hd}).transpose(1, 2);
}

at::Tensor swiglu(const at::Tensor &gate, const at::Tensor &up) { return at::silu(gate) * up; }

// mark laps into phase when there is a lap.
void mark(Lap *lap, double StepProfile::*phase) {
  if (lap != nullptr) (*lap)(phase);
}

// attention_block is x plus the attention block of decoder_layer. Its
// queries, keys and values are freed when it returns, before the MLP runs.
at::Tensor attention_block(const LayerWeights &w, const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin,
                           const Attend &attend, Lap *lap) {
  const Layer &l = w.l;
  const auto &c = w.m.cfg;
  const bool gemma = c.gemma != 0;
  at::Tensor h = gemma ? gemma_norm(x, l.input_layernorm, c.rms_eps) : norm(w.m, x, l.input_layernorm);
  mark(lap, nullptr);
  std::vector<at::Tensor> qkv = project_group(w, kQKV, h);
  h.reset();
  at::Tensor q, k, v, gate;
  if (c.attn_output_gate != 0) {
    // Per head: the query's head_dim rows, then the gate's.
    at::Tensor qg = qkv[0].view({x.size(0), x.size(1), c.heads, 2 * c.head_dim});
    q = qg.narrow(-1, 0, c.head_dim).transpose(1, 2);
    gate = qg.narrow(-1, c.head_dim, c.head_dim).reshape({x.size(0), x.size(1), c.heads * c.head_dim});
  } else {
    q = heads(qkv[0], c.heads, l.head_dim);
  }
  if (qkv[1].defined()) {
    k = heads(qkv[1], l.kv_heads, l.head_dim);
    v = qkv[2].defined() ? heads(qkv[2], l.kv_heads, l.head_dim) : k;  // k_eq_v: the keys' projection
  }
  qkv.clear();
  if (gemma) {
    q = gemma_norm(q, l.q_norm, c.rms_eps);
    if (k.defined()) {
      k = gemma_norm(k, l.k_norm, c.rms_eps);
      v = gemma_norm(v, at::Tensor(), c.rms_eps);
    }
  } else if (l.q_norm.defined()) {
    q = norm(w.m, q, l.q_norm);
    k = norm(w.m, k, l.k_norm);
  }
  if (cos.numel() > 0) {  // (empty tables: Nemotron-H's attention has no RoPE)
    q = apply_rope(q, cos, sin);
    if (k.defined()) k = apply_rope(k, cos, sin);
  }
  if (l.kv_reuse) {
    TORCH_CHECK(w.share != nullptr && w.share->k[l.sliding].defined(), "a kv-shared layer run without its keys and values");
    k = w.share->k[l.sliding];
    v = w.share->v[l.sliding];
  } else if (l.kv_store && w.share != nullptr) {
    w.share->k[l.sliding] = k;
    w.share->v[l.sliding] = v;
  }
  mark(lap, &StepProfile::products);
  at::Tensor a = attend(q, k, v);
  mark(lap, &StepProfile::attention);
  if (gate.defined()) a = a * at::sigmoid(gate);
  at::Tensor o = project_one(w, kLoraO, a);
  return x + (gemma ? gemma_norm(o, l.post_attention_layernorm, c.rms_eps) : o);
}

// mlp_block is the MLP of decoder_layer on its normed input h, without
// the residual: down_proj(silu(gate) * up). gate and up are freed before
// the down projection.
at::Tensor mlp_block(const LayerWeights &w, const at::Tensor &h) {
  if (w.l.router.defined() && w.m.cfg.gemma == 0) return moe_mlp(w.l, w.m.cfg, h, w.router_logits, w.replay, w.chosen);
  if (!w.l.gate_proj.defined()) return project_one(w, kLoraDown, at::relu(project_one(w, kLoraUp, h)).square());  // relu²
  std::vector<at::Tensor> gu = project_group(w, kGateUp, h);
  at::Tensor act = w.m.cfg.gemma != 0 ? at::gelu(gu[0], "tanh") * gu[1] : swiglu(gu[0], gu[1]);
  gu.clear();
  return project_one(w, kLoraDown, act);
}

}  // namespace

at::Tensor decoder_layer(const LayerWeights &w, const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin,
                         const Attend &attend, Lap *lap, at::Tensor out, const Scan *scan) {
  at::Tensor r;
  if (w.m.cfg.nemotron != 0) {  // one block
    if (w.l.q_proj.defined()) {
      r = attention_block(w, x, cos, sin, attend, lap);
    } else if (w.l.mamba()) {
      TORCH_CHECK(scan != nullptr && scan->ssd, "a Mamba-2 layer run without its scan");
      r = x + mamba2_block(w.m, w.l, norm(w.m, x, w.l.input_layernorm), *scan);
    } else {
      r = x + mlp_block(w, norm(w.m, x, w.l.input_layernorm));
    }
    mark(lap, &StepProfile::products);
    return out.defined() ? out.copy_(r) : r;
  }
  if (w.l.linear()) {
    TORCH_CHECK(scan != nullptr, "a Gated DeltaNet layer run without its scan");
    r = x + deltanet_block(w.m, w.l, norm(w.m, x, w.l.input_layernorm), *scan);
    mark(lap, &StepProfile::products);
  } else {
    r = attention_block(w, x, cos, sin, attend, lap);
  }
  if (w.m.cfg.gemma != 0) {
    const double eps = w.m.cfg.rms_eps;
    at::Tensor y = mlp_block(w, gemma_norm(r, w.l.pre_feedforward_layernorm, eps));
    if (w.l.router.defined())  // a MoE layer: the dense MLP's and the experts' outputs, each normed, summed
      y = gemma_norm(y, w.l.post_feedforward_layernorm_1, eps) +
          gemma_norm(moe_mlp(w.l, w.m.cfg, r, w.router_logits, w.replay, w.chosen), w.l.post_feedforward_layernorm_2, eps);
    at::Tensor h = r + gemma_norm(y, w.l.post_feedforward_layernorm, eps);
    if (w.per_layer.defined()) h = per_layer_block(w.m, w.l, h, w.per_layer);
    h = h * w.l.layer_scalar;
    mark(lap, &StepProfile::products);
    return out.defined() ? out.copy_(h) : h;
  }
  at::Tensor y = mlp_block(w, norm(w.m, r, w.l.post_attention_layernorm));
  mark(lap, &StepProfile::products);  // (the o and MLP products, with the MLP's norm and activation)
  return out.defined() ? at::add_out(out, r, y) : r + y;
}

}  // namespace ar
