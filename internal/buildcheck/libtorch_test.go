package buildcheck

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The CPU build (`make build`) takes LIBTORCH as `make cuda` does, and both
// choose the C++ standard from the libtorch's own version: libtorch 2.13's
// ATen.h stops with "C++20 or later compatible compiler is required" under
// -std=c++17, and 1.13's headers are C++17 code.

// cppCalls is the recorded compile lines (those with -c) and link lines
// (those with -shared) of a make run whose compiler and go were the recorder.
func cppCalls(t *testing.T, log string) (compiles, links [][]string) {
	t.Helper()
	for _, call := range recorded(t, log) {
		args := strings.Fields(call)
		switch {
		case slices.Contains(args, "-c"):
			compiles = append(compiles, args)
		case slices.Contains(args, "-shared"):
			links = append(links, args)
		}
	}
	return compiles, links
}

// Every compile of `make build` and of `make cuda` gets the standard the
// libtorch's version calls for, and says which libtorch it compiles against.
func TestMakeCStandardFollowsLibtorch(t *testing.T) {
	for _, tc := range []struct {
		major, minor int
		headerOnly   bool // version.h includes torch/headeronly/version.h (2.9 on)
		std          string
	}{
		{1, 13, false, "-std=c++17"},
		{2, 11, true, "-std=c++17"},
		{2, 12, true, "-std=c++17"},
		{2, 13, true, "-std=c++20"},
		{2, 15, true, "-std=c++20"},
		{3, 0, true, "-std=c++20"},
	} {
		for _, target := range []string{"build", "cuda"} {
			dir := realTempDir(t)
			torch := fakeLibtorch(t, filepath.Join(dir, "libtorch"), `set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")`)
			writeVersion(t, filepath.Join(torch, "include"), tc.major, tc.minor, tc.headerOnly)
			writeFile(t, filepath.Join(torch, "include", "gloo", "config.h"), "")
			tree := makeTree(t)
			rec, log := recorder(t)
			out, err := runMake(t, tree, target, "LIBTORCH="+torch, "CUDA_HOME="+fakeCUDA(t, dir), "NCCL=off", "CXX="+rec, "GO="+rec)
			if err != nil {
				t.Fatalf("make %s against libtorch %d.%d: %v\n%s", target, tc.major, tc.minor, err, out)
			}
			compiles, _ := cppCalls(t, log)
			if len(compiles) == 0 {
				t.Fatalf("make %s against libtorch %d.%d compiled nothing:\n%s", target, tc.major, tc.minor, out)
			}
			for _, args := range compiles {
				if !slices.Contains(args, tc.std) {
					t.Errorf("make %s against libtorch %d.%d: compile line lacks %s: %s", target, tc.major, tc.minor, tc.std, strings.Join(args, " "))
				}
				if n := len(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return !strings.HasPrefix(a, "-std=") })); n != 1 {
					t.Errorf("make %s: %d -std= flags on one compile line: %s", target, n, strings.Join(args, " "))
				}
			}
			if !strings.Contains(out, "C++ standard: "+strings.TrimPrefix(tc.std, "-std=")) {
				t.Errorf("make %s output does not state the standard %s:\n%s", target, tc.std, out)
			}
		}
	}
}

// A user with a pip-installed torch builds the CPU trainer against it:
// `make build LIBTORCH=<the wheel's torch/>` compiles with its headers and
// ABI, links the shim against its lib/ with that folder as the run path,
// and builds bin/trainer without the cuda tag.
func TestMakeCPUAgainstAWheel(t *testing.T) {
	dir := realTempDir(t)
	site := filepath.Join(dir, "venv", "lib", "python3.11", "site-packages")
	torch := fakeLibtorch(t, filepath.Join(site, "torch"), `set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")`)
	writeFile(t, filepath.Join(torch, "__init__.py"), "")
	gloo := filepath.Join(dir, "gloo")
	writeFile(t, filepath.Join(gloo, "include", "gloo", "config.h"), "")
	tree := makeTree(t)
	rec, log := recorder(t)
	// No CUDA_HOME: the CPU build needs no CUDA toolkit, even from a CUDA wheel.
	out, err := runMake(t, tree, "build", "LIBTORCH="+torch, "GLOO_HOME="+gloo, "CXX="+rec, "GO="+rec)
	if err != nil {
		t.Fatalf("make build LIBTORCH=%s: %v\n%s", torch, err, out)
	}
	for _, want := range []string{"cgo/torchflags.sh cpu: libtorch 2.11 at " + torch + " (a PyTorch wheel's torch/ folder)", "NCCL: none (a CPU build)", "CUDA headers: none (a CPU build)"} {
		if !strings.Contains(out, want) {
			t.Errorf("make build output lacks %q:\n%s", want, out)
		}
	}
	compiles, links := cppCalls(t, log)
	for _, args := range compiles {
		for _, w := range []string{"-D_GLIBCXX_USE_CXX11_ABI=1", "-DAGENTRL_GLOO=1", "-DAGENTRL_NCCL=0", "-isystem" + filepath.Join(torch, "include"), "-isystem" + filepath.Join(gloo, "include")} {
			if !slices.Contains(args, w) {
				t.Errorf("compile line lacks %s: %s", w, strings.Join(args, " "))
			}
		}
		if slices.Contains(args, "-DAGENTRL_CUDA") {
			t.Errorf("the CPU build compiled with -DAGENTRL_CUDA: %s", strings.Join(args, " "))
		}
	}
	if len(links) != 1 {
		t.Fatalf("%d link lines, want 1", len(links))
	}
	lib := filepath.Join(torch, "lib")
	for _, w := range []string{"-L" + lib, "-Wl,-rpath," + lib, "-ltorch", "-ltorch_cpu", "-lc10"} {
		if !slices.Contains(links[0], w) {
			t.Errorf("link line lacks %s: %s", w, strings.Join(links[0], " "))
		}
	}
	if slices.Contains(links[0], "-ltorch_cuda") {
		t.Errorf("the CPU shim links libtorch_cuda: %s", strings.Join(links[0], " "))
	}
	if calls := recorded(t, log); !slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "build -o bin/trainer ./cmd/trainer") }) {
		t.Errorf("no go build of bin/trainer among %q", calls)
	}
}

// Debian's libtorch-dev and libtorch-cuda-dev put the headers in
// <prefix>/include and the libraries in <prefix>/lib/<triplet>: LIBTORCH
// names the prefix (here the /usr of a root filesystem), and the flags name
// that library folder.
func TestMakeDebianLayout(t *testing.T) {
	triplet, err := exec.Command("gcc", "-print-multiarch").Output()
	if err != nil || strings.TrimSpace(string(triplet)) == "" {
		t.Skip("gcc -print-multiarch gives no triplet: not a Debian-style system")
	}
	dir := realTempDir(t)
	usr := filepath.Join(dir, "root", "usr")
	libdir := filepath.Join(usr, "lib", strings.TrimSpace(string(triplet)))
	for _, lib := range []string{"libtorch_cuda.so", "libc10_cuda.so", "libtorch.so", "libtorch_cpu.so", "libc10.so"} {
		writeFile(t, filepath.Join(libdir, lib), "")
	}
	writeFile(t, filepath.Join(usr, "include", "torch", "csrc", "api", "include", "torch", "torch.h"), "")
	writeVersion(t, filepath.Join(usr, "include"), 2, 6, false)
	writeFile(t, filepath.Join(libdir, "cmake", "Torch", "TorchConfig.cmake"), `set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")`+"\n")
	writeFile(t, filepath.Join(usr, "include", "gloo", "config.h"), "")
	writeFile(t, filepath.Join(usr, "include", "nccl.h"), "#define NCCL_MAJOR 2\n#define NCCL_MINOR 22\n#define NCCL_PATCH 3\n")
	for _, target := range []string{"build", "cuda"} {
		tree := makeTree(t)
		rec, log := recorder(t)
		out, err := runMake(t, tree, target, "LIBTORCH="+usr, "CUDA_HOME="+fakeCUDA(t, dir), "NCCL_HOME="+usr, "CXX="+rec, "GO="+rec)
		if err != nil {
			t.Fatalf("make %s LIBTORCH=%s: %v\n%s", target, usr, err, out)
		}
		for _, want := range []string{"libtorch 2.6 at " + usr + " (a Debian-style prefix), libraries in " + libdir,
			"C++ ABI: 1 (-D_GLIBCXX_USE_CXX11_ABI=1 in " + filepath.Join(libdir, "cmake", "Torch", "TorchConfig.cmake") + ")"} {
			if !strings.Contains(out, want) {
				t.Errorf("make %s output lacks %q:\n%s", target, want, out)
			}
		}
		_, links := cppCalls(t, log)
		if len(links) != 1 {
			t.Fatalf("make %s: %d link lines, want 1", target, len(links))
		}
		for _, w := range []string{"-L" + libdir, "-Wl,-rpath," + libdir} {
			if !slices.Contains(links[0], w) {
				t.Errorf("make %s: link line lacks %s: %s", target, w, strings.Join(links[0], " "))
			}
		}
	}
}
