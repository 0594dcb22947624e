package buildcheck

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// parseDockerfile splits a Dockerfile into stages (each starting at FROM)
// of instructions; comments and blank lines are dropped.
func parseDockerfile(text string) (stages [][]instruction) {
	var ins []instruction
	var cur strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		ins = append(ins, instruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	for _, in := range ins {
		if in.cmd == "FROM" || len(stages) == 0 {
			stages = append(stages, nil)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	return stages
}

// The Dockerfile can't be built here (no Docker engine), so this reads it
// against the Makefile and the cgo flags: `make cuda` gets an absolute
// LIBTORCH, whose lib/ the runtime image keeps at the same path (the
// shim's rpath, which the make cuda tests check); the shim sits in ../lib
// of the trainer binary (the binary's $ORIGIN/../lib rpath); the
// entrypoint is that binary; the runtime has the libgomp the shim's
// -fopenmp needs; the libtorch archive matches the CUDA image and is named
// as from 2.8; nccl.h comes from NCCL_HOME; Go is new enough for go.mod;
// the three volumes are declared.
func TestDockerfileMatchesBuild(t *testing.T) {
	root := repoRoot(t)
	stages := parseDockerfile(readFile(t, filepath.Join(root, "Dockerfile")))
	if len(stages) != 3 { // global ARGs, build, runtime
		t.Fatalf("want global ARGs and two stages (build, runtime), got %d sections", len(stages))
	}
	build, runtime := stages[1], stages[2]
	if !strings.Contains(build[0].args, "devel") || !strings.HasSuffix(build[0].args, " AS build") {
		t.Errorf("build stage FROM %s, want a CUDA devel image named build", build[0].args)
	}
	if !strings.Contains(runtime[0].args, "-runtime-") {
		t.Errorf("runtime stage FROM %s, want a CUDA runtime image", runtime[0].args)
	}

	cgoCuda := readFile(t, filepath.Join(root, "torch", "cgo_cuda.go"))
	if !strings.Contains(cgoCuda, "-Wl,-rpath,$ORIGIN/../lib") {
		t.Fatal("the rpath this test relies on changed: the binary's $ORIGIN/../lib (torch/cgo_cuda.go)")
	}
	libtorch, makeCuda := "", ""
	workdir := "/"
	for _, in := range build {
		if in.cmd == "WORKDIR" {
			workdir = path.Join(workdir, in.args)
		}
		if m := regexp.MustCompile(`^make cuda LIBTORCH=(\S+)`).FindStringSubmatch(in.args); in.cmd == "RUN" && m != nil {
			libtorch, makeCuda = m[1], in.args
			break
		}
	}
	if !path.IsAbs(libtorch) {
		t.Fatalf("build stage runs make cuda with LIBTORCH=%q, want an absolute path (it becomes the shim's rpath)", libtorch)
	}
	if !regexp.MustCompile(`\bNCCL_HOME=/\S+`).MatchString(makeCuda) {
		t.Errorf("build stage runs %q, want NCCL_HOME set to the nccl.h of libtorch's NCCL (the archive has none)", makeCuda)
	}

	copies := map[string]string{} // source in the build stage -> destination
	var entrypoint string
	var volumes []string
	for _, in := range runtime {
		switch in.cmd {
		case "COPY":
			if f := strings.Fields(in.args); len(f) == 3 && f[0] == "--from=build" {
				copies[f[1]] = f[2]
			}
		case "ENTRYPOINT":
			entrypoint = in.args
		case "VOLUME":
			volumes = regexp.MustCompile(`"([^"]+)"`).FindAllString(in.args, -1)
		}
	}
	if dst := copies[libtorch+"/lib"]; dst != libtorch+"/lib" {
		t.Errorf("runtime copies %s/lib to %q, want the same path: the shim's rpath", libtorch, dst)
	}
	shim := copies[path.Join(workdir, "build/cuda/libagentrl.so")]
	trainer := copies[path.Join(workdir, "bin/trainer")]
	if shim == "" || trainer == "" {
		t.Fatalf("runtime does not copy %s/build/cuda/libagentrl.so and %s/bin/trainer from the build stage (copies %v)", workdir, workdir, copies)
	}
	if want := path.Join(path.Dir(trainer), "../lib"); path.Dir(shim) != want {
		t.Errorf("shim at %s, but the trainer at %s looks in $ORIGIN/../lib = %s", shim, trainer, want)
	}
	if entrypoint != `["`+trainer+`"]` {
		t.Errorf("ENTRYPOINT %s, want [%q]", entrypoint, trainer)
	}
	if !regexp.MustCompile(`apt-get install .*\blibgomp1\b`).MatchString(strings.Join(instructionArgs(runtime, "RUN"), "\n")) {
		t.Error("the runtime stage does not install libgomp1 (the shim is linked with -fopenmp)")
	}
	for _, v := range []string{`"/models"`, `"/data"`, `"/runs"`} {
		if !slices.Contains(volumes, v) {
			t.Errorf("VOLUME lacks %s (has %v)", v, volumes)
		}
	}

	args := map[string]string{}
	for _, sec := range stages {
		for _, in := range sec {
			if k, v, ok := strings.Cut(in.args, "="); in.cmd == "ARG" && ok {
				args[k] = v
			}
		}
	}
	cuda := strings.Split(args["CUDA_VERSION"], ".")
	if len(cuda) < 2 || args["LIBTORCH_CUDA"] != "cu"+cuda[0]+cuda[1] {
		t.Errorf("libtorch for %s on a CUDA %s image", args["LIBTORCH_CUDA"], args["CUDA_VERSION"])
	}
	// From 2.8 the archive's name has no "cxx11-abi" (the only ABI left).
	var major, minor int
	if _, err := fmt.Sscanf(args["LIBTORCH_VERSION"], "%d.%d.", &major, &minor); err != nil || major < 2 || major == 2 && minor < 8 {
		t.Errorf("LIBTORCH_VERSION %s, want 2.8 or later (the archive's name below)", args["LIBTORCH_VERSION"])
	}
	if !strings.Contains(strings.Join(instructionArgs(build, "RUN"), "\n"), "libtorch-shared-with-deps-${LIBTORCH_VERSION}%2B${LIBTORCH_CUDA}.zip") {
		t.Error("the build stage does not download libtorch-shared-with-deps for LIBTORCH_VERSION and LIBTORCH_CUDA")
	}
	goMod := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, filepath.Join(root, "go.mod")))
	if goMod == nil || !strings.HasPrefix(args["GO_VERSION"], goMod[1]+".") {
		t.Errorf("GO_VERSION %s, want a %v release (go.mod)", args["GO_VERSION"], goMod)
	}
}

func instructionArgs(ins []instruction, cmd string) []string {
	var out []string
	for _, in := range ins {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// The build context leaves out local build outputs, runs and a downloaded
// libtorch: the image builds its own, and they can be gigabytes.
func TestDockerignore(t *testing.T) {
	lines := strings.Fields(readFile(t, filepath.Join(repoRoot(t), ".dockerignore")))
	for _, want := range []string{"build/", "bin/", "runs/", "third_party/libtorch/"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
}
