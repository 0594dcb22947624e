package metric

import "time"

// Rollout is what a training rollout measures: where its time went.
type Rollout struct {
	Generated                       int // tokens sampled
	Wall, Decode, Prefill, ToolWait time.Duration
	DecodeBatchMean                 float64 // mean number of slots per decode step
}

// Add adds the rollout's throughput and time split to m.
func (r Rollout) Add(m map[string]float64) {
	m[TokensPerSRollout] = 0
	if r.Wall > 0 {
		m[TokensPerSRollout] = float64(r.Generated) / r.Wall.Seconds()
	}
	m[TimeRolloutS] = r.Wall.Seconds()
	m[TimeDecodeS] = r.Decode.Seconds()
	m[TimePrefillS] = r.Prefill.Seconds()
	m[TimeToolWaitS] = r.ToolWait.Seconds()
	m[DecodeBatchMean] = r.DecodeBatchMean
}

// UpdateThroughput is the update's tokens per second: tokens of the
// trained trajectories times epochs over the update's wall time.
func UpdateThroughput(tokens, epochs int, wall time.Duration) float64 {
	return float64(tokens*epochs) / wall.Seconds()
}

// Memory adds the memory figures at the end of an iteration to m: on CUDA
// the allocated and peak bytes, on the CPU the host cache's mapped and
// peak bytes.
func Memory(m map[string]float64, cuda bool, held, peak int64) {
	if cuda {
		m[CUDAAllocatedGB], m[CUDAPeakGB] = float64(held)/1e9, float64(peak)/1e9
		return
	}
	m[HostMappedGB], m[HostPeakGB] = float64(held)/1e9, float64(peak)/1e9
}

// Engine is what the sampler's engine did over an iteration: the
// differences of its counters, and on CUDA the graphs it holds.
type Engine struct {
	Refreshes, EagerSteps, Captures int64
	CUDA                            bool
	Graphs                          int // -1: unknown
}

// Add adds the engine's figures to m (the CUDA ones on CUDA only).
func (e Engine) Add(m map[string]float64) {
	m[EngineRefreshes] = float64(e.Refreshes)
	m[EngineEagerSteps] = float64(e.EagerSteps)
	if !e.CUDA {
		return
	}
	m[CUDAGraphCaptures] = float64(e.Captures)
	if e.Graphs >= 0 {
		m[CUDAGraphs] = float64(e.Graphs)
	}
}
