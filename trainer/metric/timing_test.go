package metric

import (
	"testing"
	"time"
)

// Throughput is tokens over wall seconds (0 without wall time); the CUDA
// figures of the engine appear on CUDA only, the graphs where read; the
// host memory in GB.
func TestTimingFigures(t *testing.T) {
	m := map[string]float64{}
	Rollout{Generated: 300, Wall: 2 * time.Second}.Add(m)
	if m[TokensPerSRollout] != 150 || m[TimeRolloutS] != 2 {
		t.Errorf("rollout figures %v", m)
	}
	Rollout{Generated: 300}.Add(m)
	if m[TokensPerSRollout] != 0 {
		t.Errorf("no wall time: %v tokens/s, want 0", m[TokensPerSRollout])
	}
	m = map[string]float64{}
	Engine{Refreshes: 1, EagerSteps: 7, Captures: 2, Graphs: 3}.Add(m)
	if _, ok := m[CUDAGraphs]; ok || m[EngineEagerSteps] != 7 {
		t.Errorf("CPU engine figures %v", m)
	}
	Engine{CUDA: true, Captures: 2, Graphs: -1}.Add(m)
	if _, ok := m[CUDAGraphs]; ok || m[CUDAGraphCaptures] != 2 {
		t.Errorf("CUDA engine figures without the graphs read %v", m)
	}
	Memory(m, false, 2e9, 3e9)
	if _, ok := m[CUDAPeakGB]; ok || m[HostMappedGB] != 2 || m[HostPeakGB] != 3 {
		t.Errorf("host memory figures %v", m)
	}
	for k := range m {
		if !Declared(k) {
			t.Errorf("%s recorded but not declared", k)
		}
	}
}
