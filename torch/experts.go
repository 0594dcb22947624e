package torch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/torch/safetensors"
)

// A sparse layer's experts are parameters of their own here, one SwiGLU
// MLP each: model.layers.{i}.mlp.experts.{e}.{gate,up,down}_proj.weight,
// the keys transformers' save_pretrained writes. A checkpoint may instead
// hold each layer's experts fused, as transformers 5 keeps them in memory
// and as the published Qwen3.5 MoE checkpoints store them:
// mlp.experts.gate_up_proj [experts, 2 x moe_intermediate, hidden] (each
// expert's gate_proj rows, then its up_proj rows) and mlp.experts.down_proj
// [experts, hidden, moe_intermediate]. Either form loads; a layer's expert e
// is then its rows of the fused tensors. Save writes the per-expert keys.

// expertProjections are the per-expert parameters' names after
// mlp.experts.{e}.
var expertProjections = []string{"gate_proj.weight", "up_proj.weight", "down_proj.weight"}

// Fused expert tensors' names after a layer's prefix.
const (
	fusedGateUp = "mlp.experts.gate_up_proj"
	fusedDown   = "mlp.experts.down_proj"
)

// expertParam splits rest, a layer's parameter name after its prefix, into
// the expert and the projection when it is an expert's
// (mlp.experts.{e}.{projection}).
func expertParam(rest string) (e int, projection string, ok bool) {
	after, ok := strings.CutPrefix(rest, "mlp.experts.")
	if !ok {
		return 0, "", false
	}
	idx, projection, ok := strings.Cut(after, ".")
	e, err := strconv.Atoi(idx)
	if !ok || err != nil || e < 0 || strconv.Itoa(e) != idx {
		return 0, "", false
	}
	for _, p := range expertProjections {
		if projection == p {
			return e, projection, true
		}
	}
	return 0, "", false
}

// isExpertParam reports whether rest (a layer's parameter name after its
// prefix) is one of an expert's.
func isExpertParam(rest string) bool {
	_, _, ok := expertParam(rest)
	return ok
}

// fusedExperts reports whether checkpoint r holds sparse layer i's experts
// as the fused tensors.
func fusedExperts(r *safetensors.Reader, c Config, i int) bool {
	_, ok := r.Info(c.checkpointName(fmt.Sprintf("%s%d.%s", layerPrefix, i, fusedGateUp)))
	return ok
}

// fusedExpertShapes are the fused expert tensors of a sparse layer of c,
// named after the layer's prefix.
func (c Config) fusedExpertShapes() []ParamShape {
	E, I, H := int64(c.MoE.Experts), int64(c.MoE.Intermediate), int64(c.Hidden)
	return []ParamShape{{Name: fusedGateUp, Shape: []int64{E, 2 * I, H}}, {Name: fusedDown, Shape: []int64{E, H, I}}}
}

// fusedExpertSource is where expert parameter rest of layer i lies in a
// checkpoint with fused experts: the tensor's checkpoint key and the
// elements [lo, hi) of it (row-major) that are the parameter.
func (c Config) fusedExpertSource(i int, rest string) (src string, lo, hi int64) {
	e, projection, _ := expertParam(rest)
	I, H := int64(c.MoE.Intermediate), int64(c.Hidden)
	n := I * H // elements of one projection of one expert
	name := fusedGateUp
	switch projection {
	case "gate_proj.weight":
		lo = int64(e) * 2 * n
	case "up_proj.weight":
		lo = int64(e)*2*n + n
	default:
		name, lo = fusedDown, int64(e)*n
	}
	return c.checkpointName(fmt.Sprintf("%s%d.%s", layerPrefix, i, name)), lo, lo + n
}
