package buildcheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// These tests run `make cuda` against fake libtorch folders: empty libraries
// and the few files cgo/torchflags.sh reads, laid out as a PyTorch wheel or
// as the libtorch archive. A recording script stands in for the C++ compiler
// and for go, so make reaches the compile and link lines without a GPU, CUDA
// or libtorch, and the test reads the flags they got.

// `make cuda` with LIBTORCH pointing at a folder without a CUDA libtorch
// stops before building anything, says where it looked and how to get one.
func TestMakeCudaWithoutLibtorch(t *testing.T) {
	tree := makeTree(t)
	rec, log := recorder(t)
	empty := t.TempDir()
	out, err := runMake(t, tree, "cuda", "LIBTORCH="+empty, "CXX="+rec, "GO="+rec)
	if err == nil {
		t.Fatalf("make cuda succeeded without a CUDA libtorch:\n%s", out)
	}
	looked := filepath.Join(empty, "lib", "libtorch_cuda.so")
	for _, want := range []string{"no CUDA libtorch found", "looked for " + looked, "LIBTORCH=", "wheel", "Nothing was built"} {
		if !strings.Contains(out, want) {
			t.Errorf("make cuda output lacks %q:\n%s", want, out)
		}
	}
	if calls := recorded(t, log); len(calls) > 0 {
		t.Errorf("make cuda ran the compiler or go without a libtorch: %q", calls)
	}
}

// A pip-installed CUDA PyTorch wheel: LIBTORCH is site-packages/torch, its
// TorchConfig.cmake says ABI 0 (as 2.5 and 2.6 wheels do), gloo's headers are
// in its include/, nccl.h is in the nvidia-nccl wheel beside it.
func TestMakeCudaWheel(t *testing.T) {
	dir := realTempDir(t)
	site := filepath.Join(dir, "venv", "lib", "python3.12", "site-packages")
	torch := fakeLibtorch(t, filepath.Join(site, "torch"), `set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")`)
	writeFile(t, filepath.Join(torch, "__init__.py"), "")
	writeFile(t, filepath.Join(torch, "include", "gloo", "config.h"), "")
	ncclInc := filepath.Join(site, "nvidia", "nccl", "include")
	writeFile(t, filepath.Join(ncclInc, "nccl.h"), "#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n#define NCCL_PATCH 5\n")
	cuda := fakeCUDA(t, dir)

	tree := makeTree(t)
	rec, log := recorder(t)
	out, err := runMake(t, tree, "cuda", "LIBTORCH="+torch, "CUDA_HOME="+cuda, "CXX="+rec, "GO="+rec)
	if err != nil {
		t.Fatalf("make cuda: %v\n%s", err, out)
	}
	for _, want := range []string{
		"a PyTorch wheel's torch/ folder",
		"C++ ABI: 0 (-D_GLIBCXX_USE_CXX11_ABI=0 in " + filepath.Join(torch, "share", "cmake", "Torch", "TorchConfig.cmake") + ")",
		"NCCL: nccl.h 2.21.5 in " + ncclInc,
		"Gloo: gloo/config.h in " + filepath.Join(torch, "include"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make cuda output lacks %q:\n%s", want, out)
		}
	}
	checkBuild(t, tree, log, torch,
		[]string{"-D_GLIBCXX_USE_CXX11_ABI=0", "-DAGENTRL_NCCL=1", "-DAGENTRL_GLOO=1", "-isystem" + ncclInc, "-isystem" + filepath.Join(cuda, "include")},
		nil)
}

// The libtorch archive (include/ and lib/ the same as a wheel's torch/) with
// ABI 1 in its TorchConfig.cmake, nccl.h from NCCL_HOME and gloo's headers
// from GLOO_HOME.
func TestMakeCudaLibtorchArchive(t *testing.T) {
	dir := realTempDir(t)
	torch := fakeLibtorch(t, filepath.Join(dir, "libtorch"), `set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")`)
	nccl := filepath.Join(dir, "nccl")
	writeFile(t, filepath.Join(nccl, "include", "nccl.h"), "")
	gloo := filepath.Join(dir, "gloo")
	writeFile(t, filepath.Join(gloo, "include", "gloo", "config.h"), "")
	cuda := fakeCUDA(t, dir)

	tree := makeTree(t)
	rec, log := recorder(t)
	out, err := runMake(t, tree, "cuda", "LIBTORCH="+torch, "CUDA_HOME="+cuda, "NCCL_HOME="+nccl, "GLOO_HOME="+gloo, "CXX="+rec, "GO="+rec)
	if err != nil {
		t.Fatalf("make cuda: %v\n%s", err, out)
	}
	if want := "libtorch 2.11 at " + torch + " (a libtorch archive)"; !strings.Contains(out, want) {
		t.Errorf("make cuda output lacks %q:\n%s", want, out)
	}
	checkBuild(t, tree, log, torch,
		[]string{"-D_GLIBCXX_USE_CXX11_ABI=1", "-DAGENTRL_NCCL=1", "-DAGENTRL_GLOO=1", "-isystem" + filepath.Join(nccl, "include"), "-isystem" + filepath.Join(gloo, "include")},
		nil)
}

// Without nccl.h anywhere `make cuda` stops before compiling and names each
// place it looked; NCCL=off builds without the NCCL backend and says so.
// Likewise for gloo's headers and GLOO=off.
func TestMakeCudaWithoutNCCLOrGloo(t *testing.T) {
	dir := realTempDir(t)
	site := filepath.Join(dir, "site-packages")
	torch := fakeLibtorch(t, filepath.Join(site, "torch"), `set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")`)
	cuda := fakeCUDA(t, dir)
	tree := makeTree(t)
	rec, log := recorder(t)
	args := []string{"cuda", "LIBTORCH=" + torch, "CUDA_HOME=" + cuda, "CXX=" + rec, "GO=" + rec}

	out, err := runMake(t, tree, args...)
	if err == nil {
		t.Fatalf("make cuda succeeded without nccl.h:\n%s", out)
	}
	for _, want := range []string{
		"no nccl.h for the NCCL backend; looked in",
		filepath.Join(torch, "include") + " (libtorch's own)",
		filepath.Join(site, "nvidia", "nccl", "include") + " (the nvidia-nccl wheel beside a pip-installed torch)",
		"NCCL_HOME/include (NCCL_HOME is not set)",
		"make cuda NCCL=off",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make cuda output lacks %q:\n%s", want, out)
		}
	}
	if calls := recorded(t, log); len(calls) > 0 {
		t.Fatalf("make cuda ran the compiler or go without nccl.h: %q", calls)
	}

	out, err = runMake(t, tree, append(args, "NCCL=off")...)
	if err == nil {
		t.Fatalf("make cuda NCCL=off succeeded without gloo's headers:\n%s", out)
	}
	for _, want := range []string{"no gloo headers (gloo/config.h)", filepath.Join(torch, "include") + " (libtorch's own)", "GLOO_HOME/include (GLOO_HOME is not set)", "make cuda GLOO=off"} {
		if !strings.Contains(out, want) {
			t.Errorf("make cuda NCCL=off output lacks %q:\n%s", want, out)
		}
	}

	out, err = runMake(t, tree, append(args, "NCCL=off", "GLOO=off")...)
	if err != nil {
		t.Fatalf("make cuda NCCL=off GLOO=off: %v\n%s", err, out)
	}
	for _, want := range []string{"NCCL: off (NCCL=off)", "Gloo: off (GLOO=off)"} {
		if !strings.Contains(out, want) {
			t.Errorf("make cuda NCCL=off GLOO=off output lacks %q:\n%s", want, out)
		}
	}
	checkBuild(t, tree, log, torch,
		[]string{"-D_GLIBCXX_USE_CXX11_ABI=0", "-DAGENTRL_NCCL=0", "-DAGENTRL_GLOO=0"},
		[]string{"-isystem" + filepath.Join(site, "nvidia", "nccl", "include")})
}

// When TorchConfig.cmake does not carry the ABI (PyTorch 2.8 and later), it
// comes from the python beside a wheel, else from libc10.so's symbols, else
// `make cuda-flags` stops naming all three.
func TestCudaFlagsABIFallbacks(t *testing.T) {
	tree := makeTree(t)
	flags := func(t *testing.T, torch string, extra ...string) (string, error) {
		t.Helper()
		cuda := fakeCUDA(t, t.TempDir())
		return runMake(t, tree, append([]string{"cuda-flags", "LIBTORCH=" + torch, "CUDA_HOME=" + cuda, "NCCL=off", "GLOO=off"}, extra...)...)
	}
	noABI := "set(TORCH_CXX_FLAGS)" // no -D_GLIBCXX_USE_CXX11_ABI

	t.Run("python beside the wheel", func(t *testing.T) {
		prefix := realTempDir(t)
		torch := fakeLibtorch(t, filepath.Join(prefix, "lib", "python3.12", "site-packages", "torch"), noABI)
		if err := os.RemoveAll(filepath.Join(torch, "share")); err != nil { // no TorchConfig.cmake at all
			t.Fatal(err)
		}
		python := filepath.Join(prefix, "bin", "python3")
		writeFile(t, python, "#!/bin/sh\necho '"+torch+"'\necho 1\n")
		if err := os.Chmod(python, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := flags(t, torch)
		if err != nil {
			t.Fatalf("make cuda-flags: %v\n%s", err, out)
		}
		for _, want := range []string{"C++ ABI: 1 (torch._C._GLIBCXX_USE_CXX11_ABI from " + python + ")", "-D_GLIBCXX_USE_CXX11_ABI=1 "} {
			if !strings.Contains(out, want) {
				t.Errorf("make cuda-flags output lacks %q:\n%s", want, out)
			}
		}
	})

	for _, abi := range []string{"0", "1"} {
		t.Run("libc10 symbols, ABI "+abi, func(t *testing.T) {
			cxx, err := exec.LookPath("c++")
			if err != nil {
				t.Skip("no c++ to build a libc10.so with")
			}
			if _, err := exec.LookPath("nm"); err != nil {
				t.Skip("no nm (binutils)")
			}
			torch := fakeLibtorch(t, filepath.Join(realTempDir(t), "libtorch"), noABI)
			src := filepath.Join(t.TempDir(), "c10.cpp")
			writeFile(t, src, "#include <string>\nstd::string c10_name(const std::string &s) { return s; }\n")
			build := exec.Command(cxx, "-shared", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI="+abi, "-o", filepath.Join(torch, "lib", "libc10.so"), src)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", build.Args, err, out)
			}
			out, err := flags(t, torch, "PYTHON=false")
			if err != nil {
				t.Fatalf("make cuda-flags: %v\n%s", err, out)
			}
			if want := "-D_GLIBCXX_USE_CXX11_ABI=" + abi + " "; !strings.Contains(out, want) {
				t.Errorf("make cuda-flags output lacks %q:\n%s", want, out)
			}
		})
	}

	t.Run("nothing tells", func(t *testing.T) {
		torch := fakeLibtorch(t, filepath.Join(realTempDir(t), "libtorch"), noABI)
		out, err := flags(t, torch, "PYTHON=false")
		if err == nil {
			t.Fatalf("make cuda-flags succeeded without knowing the ABI:\n%s", out)
		}
		for _, want := range []string{
			"cannot tell which C++ ABI",
			filepath.Join(torch, "share", "cmake", "Torch", "TorchConfig.cmake") + ": no -D_GLIBCXX_USE_CXX11_ABI",
			"false for torch._C._GLIBCXX_USE_CXX11_ABI",
			filepath.Join(torch, "lib", "libc10.so") + ": no symbols",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("make cuda-flags output lacks %q:\n%s", want, out)
			}
		}
	})
}

// The Go files behind the cuda build tag (torch/cgo_cuda.go) type-check:
// the CUDA build must not be the first to find they are broken.
func TestVetCudaTag(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the torch package with cgo")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	cmd := exec.Command(goBin, "vet", "-tags", "sqlite_fts5,cuda", "./torch/")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet -tags sqlite_fts5,cuda ./torch/: %v\n%s", err, out)
	}
}

// checkBuild reads the recorded calls of a `make cuda` that succeeded in
// tree: one compile per cgo/*.cpp with the libtorch headers, -DAGENTRL_CUDA
// and want (none of notWant), a link against LIBTORCH's lib/ with it as the
// rpath and libtorch_cuda kept, then go build with the cuda tag; and
// bin/trainer in place.
func checkBuild(t *testing.T, tree, log, torch string, want, notWant []string) {
	t.Helper()
	sources, err := filepath.Glob(filepath.Join(tree, "cgo", "*.cpp"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no cgo/*.cpp in %s: %v", tree, err)
	}
	want = append([]string{"-DAGENTRL_CUDA", "-isystem" + filepath.Join(torch, "include"), "-isystem" + filepath.Join(torch, "include", "torch", "csrc", "api", "include")}, want...)
	var compiles, links, gos int
	for _, call := range recorded(t, log) {
		args := strings.Fields(call)
		switch {
		case slices.Contains(args, "-c"):
			compiles++
			for _, w := range want {
				if !slices.Contains(args, w) {
					t.Errorf("compile line lacks %s: %s", w, call)
				}
			}
			for _, w := range notWant {
				if slices.Contains(args, w) {
					t.Errorf("compile line has %s: %s", w, call)
				}
			}
		case slices.Contains(args, "-shared"):
			links++
			lib := filepath.Join(torch, "lib")
			for _, w := range []string{"-L" + lib, "-Wl,-rpath," + lib} {
				if !slices.Contains(args, w) {
					t.Errorf("link line lacks %s: %s", w, call)
				}
			}
			if i := slices.Index(args, "-ltorch_cuda"); i < 1 || args[i-1] != "-Wl,--no-as-needed" {
				t.Errorf("link line does not keep libtorch_cuda with -Wl,--no-as-needed: %s", call)
			}
		case len(args) > 2 && args[0] == "build" && args[2] == "bin/trainer-cuda":
			gos++
		default:
			t.Errorf("unexpected call: %s", call)
		}
	}
	if compiles != len(sources) || links != 1 || gos != 1 {
		t.Errorf("%d compiles (want %d, one per cgo/*.cpp), %d links, %d go builds (want 1 each)", compiles, len(sources), links, gos)
	}
	if _, err := os.Stat(filepath.Join(tree, "bin", "trainer")); err != nil {
		t.Errorf("make cuda left no bin/trainer: %v", err)
	}
}

// fakeLibtorch lays out at root what cgo/torchflags.sh reads of a libtorch
// 2.11: empty libraries in lib/, torch.h and version.h under
// include/torch/csrc/api/include, and share/cmake/Torch/TorchConfig.cmake
// holding config. It returns root.
func fakeLibtorch(t *testing.T, root, config string) string {
	t.Helper()
	for _, lib := range []string{"libtorch_cuda.so", "libc10_cuda.so", "libtorch.so", "libtorch_cpu.so", "libc10.so"} {
		writeFile(t, filepath.Join(root, "lib", lib), "")
	}
	writeFile(t, filepath.Join(root, "include", "torch", "csrc", "api", "include", "torch", "torch.h"), "")
	writeVersion(t, filepath.Join(root, "include"), 2, 11, false)
	writeFile(t, filepath.Join(root, "share", "cmake", "Torch", "TorchConfig.cmake"), config+"\n")
	return root
}

// writeVersion writes torch/version.h under include as libtorch major.minor
// does: the defines in torch/csrc/api/include/torch/version.h itself, or,
// headerOnly (2.9 on), in torch/headeronly/version.h, which it includes.
func writeVersion(t *testing.T, include string, major, minor int, headerOnly bool) {
	t.Helper()
	defines := fmt.Sprintf("#pragma once\n#define TORCH_VERSION_MAJOR %d\n#define TORCH_VERSION_MINOR %d\n#define TORCH_VERSION_PATCH 0\n", major, minor)
	api := filepath.Join(include, "torch", "csrc", "api", "include", "torch", "version.h")
	if !headerOnly {
		writeFile(t, api, defines)
		return
	}
	writeFile(t, api, "#include <torch/headeronly/version.h>\n")
	writeFile(t, filepath.Join(include, "torch", "headeronly", "version.h"), defines)
}

// fakeCUDA makes dir/cuda a CUDA_HOME with include/cuda_runtime_api.h.
func fakeCUDA(t *testing.T, dir string) string {
	t.Helper()
	cuda := filepath.Join(dir, "cuda")
	writeFile(t, filepath.Join(cuda, "include", "cuda_runtime_api.h"), "")
	return cuda
}

// makeTree copies what `make cuda` reads (the Makefile, cgo/, go.mod and
// go.sum) into a new folder, so that a test build writes nothing into the
// repository, and returns that folder.
func makeTree(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: the CUDA build's make rules cannot be run")
	}
	root := repoRoot(t)
	tree := t.TempDir()
	cgo, err := os.ReadDir(filepath.Join(root, "cgo"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"Makefile", "go.mod", "go.sum"}
	for _, e := range cgo {
		files = append(files, filepath.Join("cgo", e.Name()))
	}
	for _, f := range files {
		info, err := os.Stat(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(tree, f), readFile(t, filepath.Join(root, f)))
		if err := os.Chmod(filepath.Join(tree, f), info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return tree
}

// recorder writes a script that stands in for the C++ compiler and for go:
// it appends its arguments, as one line, to the log it returns and creates
// the file named after -o.
func recorder(t *testing.T) (script, log string) {
	t.Helper()
	dir := t.TempDir()
	script, log = filepath.Join(dir, "record"), filepath.Join(dir, "calls.log")
	writeFile(t, script, `#!/bin/sh
echo "$*" >> '`+log+`'
out=; prev=
for a in "$@"; do
	if [ "$prev" = -o ]; then out=$a; fi
	prev=$a
done
if [ -n "$out" ]; then : > "$out"; fi
`)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log
}

// recorded is the calls the recorder logged, one per line.
func recorded(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// runMake runs make in dir and returns its output. It runs outside any
// enclosing make (as under `make test`) and without the caller's libtorch,
// CUDA, NCCL, Gloo and python settings, which the Makefile reads from the
// environment.
func runMake(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", dir}, args...)...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES",
			"LIBTORCH", "CUDA_HOME", "NCCL", "NCCL_HOME", "GLOO", "GLOO_HOME", "PYTHON":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("make %v: %v", args, err)
	}
	return string(out), err
}

// realTempDir is t.TempDir() with symbolic links resolved, as
// cgo/torchflags.sh reports its paths.
func realTempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
