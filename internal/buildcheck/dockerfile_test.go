package buildcheck

import (
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

// The Dockerfile can't be built here (no Docker engine), but its recipe is
// exercised: scripts/image-check.sh makes the same root filesystem from
// image/packages.txt (scripts/root.sh trixie-cuda) and runs the same build
// command in it. This reads the Dockerfile against those: it is Debian
// trixie, the suite root.sh makes; it installs image/packages.txt and
// nothing else; it runs the build command image-check.sh runs; the shim sits
// in ../lib of the trainer (the binary's $ORIGIN/../lib rpath), which is the
// entrypoint; Go comes as go.mod says (GOTOOLCHAIN=auto); the three volumes
// are declared.
func TestDockerfileMatchesBuild(t *testing.T) {
	root := repoRoot(t)
	stages := parseDockerfile(readFile(t, filepath.Join(root, "Dockerfile")))
	if len(stages) != 1 {
		t.Fatalf("want one stage, got %d", len(stages))
	}
	ins := stages[0]
	rootSh := readFile(t, filepath.Join(root, "scripts", "root.sh"))
	imageCheck := readFile(t, filepath.Join(root, "scripts", "image-check.sh"))
	if ins[0].args != "debian:trixie" {
		t.Errorf("FROM %s, want debian:trixie", ins[0].args)
	}
	if !regexp.MustCompile(`(?s)trixie-cuda\)\s*suite=trixie\s*components="main contrib non-free"\s*pkgs=\$\(sed 's/#\.\*//' "\$here/image/packages.txt"`).MatchString(rootSh) {
		t.Error("scripts/root.sh trixie-cuda does not make Debian trixie (main contrib non-free) from image/packages.txt")
	}
	runs := strings.Join(instructionArgs(ins, "RUN"), "\n")
	if !strings.Contains(runs, "Components: main contrib non-free") {
		t.Error("the Dockerfile does not enable contrib and non-free")
	}
	if !slices.Contains(instructionArgs(ins, "COPY"), "image/packages.txt /tmp/packages.txt") ||
		!strings.Contains(runs, "apt-get install -y --no-install-recommends $(sed 's/#.*//' /tmp/packages.txt)") {
		t.Error("the Dockerfile does not install exactly image/packages.txt")
	}
	if n := strings.Count(runs, "apt-get install"); n != 1 {
		t.Errorf("the Dockerfile runs apt-get install %d times; every package must come from image/packages.txt", n)
	}
	pkgs := strings.Fields(regexp.MustCompile(`#.*`).ReplaceAllString(readFile(t, filepath.Join(root, "image", "packages.txt")), ""))
	for _, want := range []string{"libtorch-cuda-dev", "nvidia-cuda-toolkit", "libnccl-dev", "libgloo-cuda-dev", "g++", "make", "golang-go"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("image/packages.txt lacks %s", want)
		}
	}

	makeCuda := regexp.MustCompile(`make (-j\S+ )?cuda LIBTORCH=/usr\b`)
	if !makeCuda.MatchString(runs) || !makeCuda.MatchString(imageCheck) {
		t.Error("the Dockerfile and scripts/image-check.sh do not both build with make cuda LIBTORCH=/usr")
	}
	if !slices.Contains(instructionArgs(ins, "ENV"), "GOTOOLCHAIN=auto") {
		t.Error("the Dockerfile does not set GOTOOLCHAIN=auto (Debian's go is older than go.mod's)")
	}

	cgoCuda := readFile(t, filepath.Join(root, "torch", "cgo_cuda.go"))
	if !strings.Contains(cgoCuda, "-Wl,-rpath,$ORIGIN/../lib") {
		t.Fatal("the rpath this test relies on changed: the binary's $ORIGIN/../lib (torch/cgo_cuda.go)")
	}
	installs := regexp.MustCompile(`install -D (\S+) (\S+)`).FindAllStringSubmatch(runs, -1)
	dst := map[string]string{}
	for _, m := range installs {
		dst[m[1]] = m[2]
	}
	shim, trainer := dst["build/cuda/libagentrl.so"], dst["bin/trainer"]
	if shim == "" || trainer == "" {
		t.Fatalf("the Dockerfile does not install build/cuda/libagentrl.so and bin/trainer (installs %v)", dst)
	}
	if want := path.Join(path.Dir(trainer), "../lib"); path.Dir(shim) != want {
		t.Errorf("shim at %s, but the trainer at %s looks in $ORIGIN/../lib = %s", shim, trainer, want)
	}
	var entrypoint string
	var volumes []string
	for _, in := range ins {
		switch in.cmd {
		case "ENTRYPOINT":
			entrypoint = in.args
		case "VOLUME":
			volumes = regexp.MustCompile(`"([^"]+)"`).FindAllString(in.args, -1)
		}
	}
	if entrypoint != `["`+trainer+`"]` {
		t.Errorf("ENTRYPOINT %s, want [%q]", entrypoint, trainer)
	}
	for _, v := range []string{`"/models"`, `"/data"`, `"/runs"`} {
		if !slices.Contains(volumes, v) {
			t.Errorf("VOLUME lacks %s (has %v)", v, volumes)
		}
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
