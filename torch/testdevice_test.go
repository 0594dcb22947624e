package torch

import (
	"os"
	"testing"
)

// testDeviceEnv names the device the fixture-parity and CUDA-graph tests run
// on: "cpu" (the default when unset), "cuda" or "cuda:N". scripts/gpu-check.sh
// sets it to cuda:0.
const testDeviceEnv = "AGENTRL_TEST_DEVICE"

// testDevice is the device named by $AGENTRL_TEST_DEVICE, the CPU when it is
// unset. A CUDA device that this build or machine cannot give fails the test
// with ParseDevice's reason: a run that asked for the GPU never passes on
// the CPU instead.
func testDevice(t *testing.T) Device {
	t.Helper()
	d, err := ParseDevice(os.Getenv(testDeviceEnv))
	if err != nil {
		t.Fatalf("$%s: %v", testDeviceEnv, err)
	}
	return d
}

// parityDevice is testDevice for the float32 parity tests (1e-4 against a
// float64 reference). On CUDA the model turns on TF32 for f32 products
// (10-bit mantissas), which does not hold 1e-4; NVIDIA_TF32_OVERRIDE=0 makes
// cuBLAS and cuDNN compute in full f32 whatever the framework asks, so a
// CUDA run without it is refused, saying so.
func parityDevice(t *testing.T) Device {
	t.Helper()
	d := testDevice(t)
	if d.CUDA && os.Getenv("NVIDIA_TF32_OVERRIDE") != "0" {
		t.Fatalf("%s: f32 parity on %s needs TF32 off: run with NVIDIA_TF32_OVERRIDE=0", testDeviceEnv, d)
	}
	return d
}
