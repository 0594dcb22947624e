package torch

// #include "agentrl.h"
// #include "internal.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
)

// abiVersion is the ABI this Go package was written against.
const abiVersion = 22

var (
	checkOnce sync.Once
	checkErr  error
)

// Check verifies once that the loaded shim speaks this package's ABI and was
// compiled against the same libtorch major.minor that is loaded at run time.
// Every constructor calls it; the CLI calls it first to fail clearly.
func Check() error {
	checkOnce.Do(func() {
		var abi, cmaj, cmin, rmaj, rmin, cuda C.int
		var msg *C.char
		if err := check("info", C.ar_info(&abi, &cmaj, &cmin, &rmaj, &rmin, &cuda, &msg), msg); err != nil {
			checkErr = err
			return
		}
		switch {
		case int(abi) != abiVersion:
			checkErr = fmt.Errorf("libagentrl ABI %d, this binary expects %d: rebuild with `make clean build`", abi, abiVersion)
		case rmaj >= 0 && (rmaj != cmaj || rmin != cmin):
			checkErr = fmt.Errorf("libtorch version mismatch: the shim was compiled against headers of %d.%d but libtorch %d.%d is loaded: rebuild with `make clean build` (or `make cuda`)", cmaj, cmin, rmaj, rmin)
		case (cuda == 1) != (BuildKind == "cuda"):
			checkErr = fmt.Errorf("build mismatch: Go side is a %s build but libagentrl has cuda=%d: rebuild", BuildKind, cuda)
		}
	})
	return checkErr
}

// Version reports the libtorch version the shim was compiled against and the
// one loaded at run time (major.minor; -1 when unknown).
func Version() (compiled, loaded string) {
	var abi, cmaj, cmin, rmaj, rmin, cuda C.int
	var msg *C.char
	if check("info", C.ar_info(&abi, &cmaj, &cmin, &rmaj, &rmin, &cuda, &msg), msg) != nil {
		return "?", "?"
	}
	return fmt.Sprintf("%d.%d", cmaj, cmin), fmt.Sprintf("%d.%d", rmaj, rmin)
}

// SetDevice makes d the process's current CUDA device, so CUDA contexts,
// pinned-memory bookkeeping and NCCL land on it rather than on cuda:0
// (nothing to do for the CPU).
func SetDevice(d Device) error {
	if !d.CUDA {
		return nil
	}
	if err := Check(); err != nil {
		return err
	}
	var msg *C.char
	return check("set_device", C.ar_set_device(C.int(d.code()), &msg), msg)
}

// SetThreads makes libtorch's intra-op pool and OpenBLAS's pool use n
// cores in total (they run one after the other, so each gets n). It applies
// to every thread that later calls into libtorch.
func SetThreads(n int) error {
	var msg *C.char
	return check("set_threads", C.ar_set_threads(C.int(n), &msg), msg)
}

// Threads reports the intra-op thread count of the calling thread.
func Threads() int {
	var n C.int
	var msg *C.char
	if check("get_threads", C.ar_get_threads(&n, &msg), msg) != nil {
		return 0
	}
	return int(n)
}

// ManualSeed seeds libtorch's global generators (random initialisation).
func ManualSeed(seed uint64) error {
	var msg *C.char
	return check("manual_seed", C.ar_manual_seed(C.uint64_t(seed), &msg), msg)
}

// CUDADeviceCount is the number of visible CUDA devices (0 in CPU builds).
func CUDADeviceCount() (int, error) {
	var n C.int
	var msg *C.char
	err := check("cuda_device_count", C.ar_cuda_device_count(&n, &msg), msg)
	return int(n), err
}

// MemoryStats are a caching allocator's figures, in bytes: CUDA's for one
// device (all zero on the CPU), or the host's (HostMemory).
type MemoryStats struct {
	Allocated, Reserved, Peak int64
}

// CUDAMemory reads the allocator statistics of a device.
func CUDAMemory(d Device) (MemoryStats, error) {
	var a, r, p C.int64_t
	var msg *C.char
	err := check("cuda_memory", C.ar_cuda_memory(C.int(d.code()), &a, &r, &p, &msg), msg)
	return MemoryStats{int64(a), int64(r), int64(p)}, err
}

// HostMemory reads the CPU allocator's figures for large tensors (4 MB and
// up, host_memory.cpp): Allocated in use, Reserved mapped (in use plus kept
// for reuse), Peak the most ever in use, which Reserved never exceeds.
func HostMemory() (MemoryStats, error) {
	var a, r, p C.int64_t
	var msg *C.char
	err := check("host_memory", C.ar_host_memory(&a, &r, &p, &msg), msg)
	return MemoryStats{int64(a), int64(r), int64(p)}, err
}

// EmptyCache returns cached, unused CUDA memory to the driver (between the
// rollout and update phases); a no-op on the CPU.
func EmptyCache() error {
	var msg *C.char
	return check("cuda_empty_cache", C.ar_cuda_empty_cache(&msg), msg)
}

// Worker runs functions on one goroutine locked to its OS thread, so that
// libtorch's per-thread state (thread pools, modes) stays put while the rest
// of the program runs on as many goroutines as it likes.
type Worker struct {
	jobs chan func()
	done chan struct{}
}

// NewWorker starts a device worker.
func NewWorker() *Worker {
	w := &Worker{jobs: make(chan func()), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		defer close(w.done)
		for f := range w.jobs {
			f()
		}
	}()
	return w
}

// Do runs f on the worker's thread and returns when it has finished.
func (w *Worker) Do(f func()) {
	ch := make(chan struct{})
	w.jobs <- func() { defer close(ch); f() }
	<-ch
}

// Close stops the worker after the jobs already submitted.
func (w *Worker) Close() {
	close(w.jobs)
	<-w.done
}

// allowCUDATF32 applies what a CUDA model sets for f32 matrix products
// (TF32 on cuBLAS); cpuF32MatmulReduced says whether libtorch would run f32
// matrix products on the CPU in TF32 or bf16 (oneDNN). For the test that
// the first leaves the second alone.
func allowCUDATF32() error {
	var msg *C.char
	return check("allow_cuda_tf32_matmul", C.ar_allow_cuda_tf32_matmul(&msg), msg)
}

func cpuF32MatmulReduced() (bool, error) {
	var r C.int
	var msg *C.char
	err := check("cpu_f32_matmul_reduced", C.ar_cpu_f32_matmul_reduced(&r, &msg), msg)
	return r != 0, err
}
