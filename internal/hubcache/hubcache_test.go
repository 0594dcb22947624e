package hubcache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

const (
	mainHash = "0123456789abcdef0123456789abcdef01234567"
	tagHash  = "89abcdef0123456789abcdef0123456789abcdef"
)

// cache lays out, under dir, the cache folders of Qwen/Qwen3.5-0.8B with
// two snapshots: main names the first, the tag v1 and the ref
// refs/pr/1 the second.
func cache(t *testing.T, dir string) {
	t.Helper()
	repo := filepath.Join(dir, "models--Qwen--Qwen3.5-0.8B")
	for _, p := range []string{"snapshots/" + mainHash, "snapshots/" + tagHash, "refs/refs/pr"} {
		if err := os.MkdirAll(filepath.Join(repo, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for ref, hash := range map[string]string{"main": mainHash, "v1": tagHash, "refs/pr/1": tagHash} {
		if err := os.WriteFile(filepath.Join(repo, "refs", ref), []byte(hash), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// clearEnv unsets every variable that picks the cache, for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestCacheDirPrecedence(t *testing.T) {
	home := t.TempDir()
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, filepath.Join(home, ".cache/huggingface/hub")},
		{map[string]string{"XDG_CACHE_HOME": "/x"}, "/x/huggingface/hub"},
		{map[string]string{"XDG_CACHE_HOME": "/x", "HF_HOME": "/h"}, "/h/hub"},
		{map[string]string{"XDG_CACHE_HOME": "/x", "HF_HOME": "/h", "HUGGINGFACE_HUB_CACHE": "/old"}, "/old"},
		{map[string]string{"XDG_CACHE_HOME": "/x", "HF_HOME": "/h", "HUGGINGFACE_HUB_CACHE": "/old", "HF_HUB_CACHE": "/c"}, "/c"},
		{map[string]string{"HF_HOME": "~/hf"}, filepath.Join(home, "hf/hub")},
		{map[string]string{"HF_HUB_CACHE": "$MYDIR/hub", "MYDIR": "/data"}, "/data/hub"},
		{map[string]string{"HF_HUB_CACHE": "${NOPE}/hub"}, "${NOPE}/hub"},
	}
	for _, c := range cases {
		clearEnv(t)
		t.Setenv("HOME", home)
		os.Unsetenv("NOPE")
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		if got, from := CacheDir(); got != c.want {
			t.Errorf("%v: cache %s (%s), want %s", c.env, got, from, c.want)
		}
	}
}

func TestResolve(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	cache(t, dir)
	t.Setenv("HF_HUB_CACHE", dir)
	snap := func(h string) string { return filepath.Join(dir, "models--Qwen--Qwen3.5-0.8B", "snapshots", h) }
	for path, want := range map[string]string{
		"Qwen/Qwen3.5-0.8B":            snap(mainHash),
		"Qwen/Qwen3.5-0.8B@main":       snap(mainHash),
		"Qwen/Qwen3.5-0.8B@v1":         snap(tagHash),
		"Qwen/Qwen3.5-0.8B@refs/pr/1":  snap(tagHash),
		"Qwen/Qwen3.5-0.8B@" + tagHash: snap(tagHash),
		"":                             "",
		// Not ids: returned as they are, for their reader to report.
		"runs/x/final":    "runs/x/final",
		"/no/such/folder": "/no/such/folder",
		"a--b":            "a--b",
		"-a/b":            "-a/b",
	} {
		got, err := Resolve(path)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
}

// A folder that exists is that folder, even where an id of the same
// spelling is in the cache.
func TestResolveExistingPathWins(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	cache(t, dir)
	t.Setenv("HF_HUB_CACHE", dir)
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "Qwen", "Qwen3.5-0.8B"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	if got, err := Resolve("Qwen/Qwen3.5-0.8B"); err != nil || got != "Qwen/Qwen3.5-0.8B" {
		t.Errorf("Resolve = %q, %v; want the local folder Qwen/Qwen3.5-0.8B", got, err)
	}
}

func TestResolveErrors(t *testing.T) {
	clearEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	work := t.TempDir()
	t.Chdir(work)
	hub := filepath.Join(home, ".cache", "huggingface", "hub")
	cases := []struct {
		path string
		env  map[string]string
		want []string
	}{
		{"Qwen/Qwen3.5-0.8B", nil, []string{
			`model "Qwen/Qwen3.5-0.8B" is neither a folder nor in the Hugging Face cache`,
			"looked for the folder " + filepath.Join(work, "Qwen/Qwen3.5-0.8B"),
			"then in the Hugging Face cache " + hub + " (~/.cache/huggingface/hub; $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE and $HF_HOME are unset, and so is $XDG_CACHE_HOME)",
			"for " + filepath.Join(hub, "models--Qwen--Qwen3.5-0.8B/refs/main") + ` (the commit that "main" names): absent`,
			"hf download Qwen/Qwen3.5-0.8B`",
		}},
		{"Qwen/Qwen3.5-0.8B@v2", map[string]string{"HF_HOME": "/hf"}, []string{
			"then in the Hugging Face cache /hf/hub ($HF_HOME/hub; $HF_HUB_CACHE and $HUGGINGFACE_HUB_CACHE are unset)",
			"for /hf/hub/models--Qwen--Qwen3.5-0.8B/refs/v2",
			"hf download Qwen/Qwen3.5-0.8B --revision v2`",
		}},
		{"Qwen/Qwen3.5-0.8B@" + tagHash, map[string]string{"HF_HUB_CACHE": "/c"}, []string{
			"then in the Hugging Face cache /c (from $HF_HUB_CACHE)",
			"for the snapshot /c/models--Qwen--Qwen3.5-0.8B/snapshots/" + tagHash + ": absent",
		}},
		{"Qwen/Qwen3.5-0.8B@../../x", nil, []string{`revision "../../x" is not a commit hash or a ref name`}},
		{"Qwen/Qwen3.5-0.8B@", nil, []string{`revision "" is not a commit hash or a ref name`}},
	}
	for _, c := range cases {
		clearEnv(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		_, err := Resolve(c.path)
		if err == nil {
			t.Errorf("Resolve(%q): no error", c.path)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Resolve(%q) = %v\nwant it to say %q", c.path, err, w)
			}
		}
	}
}

// A ref whose file does not hold a commit hash, and a snapshot that is a
// file, are errors naming the file.
func TestResolveBrokenCache(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	cache(t, dir)
	t.Setenv("HF_HUB_CACHE", dir)
	repo := filepath.Join(dir, "models--Qwen--Qwen3.5-0.8B")
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("not a hash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve("Qwen/Qwen3.5-0.8B"); err == nil || !strings.Contains(err.Error(), filepath.Join(repo, "refs", "main")+` holds "not a hash\n", not a commit hash`) {
		t.Errorf("bad ref: %v", err)
	}
	other := "fedcba9876543210fedcba9876543210fedcba98"
	if err := os.WriteFile(filepath.Join(repo, "snapshots", other), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve("Qwen/Qwen3.5-0.8B@" + other); err == nil || !strings.Contains(err.Error(), "snapshots/"+other+" is not a folder") {
		t.Errorf("snapshot file: %v", err)
	}
}

func TestIsRepoID(t *testing.T) {
	for id, want := range map[string]bool{
		"gpt2": true, "Qwen/Qwen3.5-0.8B": true, "a_b/c.d-e": true,
		"a/b/c": false, "/a": false, "a/": false, "-a": false, "a.": false, "a--b": false,
		"a..b": false, "x.git": false, "./x": false, "a b": false, "café": false,
		strings.Repeat("a", 96): true, strings.Repeat("a", 97): false,
	} {
		if got := IsRepoID(id); got != want {
			t.Errorf("IsRepoID(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestInteropHubCache lays out a cache with huggingface_hub 2.4's own
// cache-writing code (the steps of its download after the HEAD call) and
// checks that every revision resolves to the folder where transformers,
// offline, finds config.json (and where huggingface_hub's
// try_to_load_from_cache and scan_cache_dir see it), for the cache that
// $HF_HUB_CACHE names and for $HF_HOME/hub.
func TestInteropHubCache(t *testing.T) {
	pyinterop.Python(t)
	const repo = "Qwen/Qwen3.5-0.8B"
	files := func(hidden int) map[string]string {
		return map[string]string{
			"config.json":    fmt.Sprintf(`{"model_type": "qwen3", "hidden_size": %d, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}`, hidden),
			"tokenizer.json": `{}`,
		}
	}
	in := map[string]any{
		"repo": repo,
		"revisions": []map[string]any{
			{"revision": "main", "commit": mainHash, "files": files(64)},
			{"revision": "v1", "commit": tagHash, "files": files(32)},
		},
		"ask": []string{"main", "v1", tagHash},
	}
	for _, env := range []string{"HF_HUB_CACHE", "HF_HOME"} {
		t.Run(env, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(env, t.TempDir())
			var out struct {
				Cache      string
				Snapshots  map[string]string
				HiddenSize map[string]int `json:"hidden_size"`
				Scan       map[string]struct {
					Refs []string
					Path string
				}
			}
			pyinterop.Run(t, testdataScript, in, &out)
			if dir, _ := CacheDir(); dir != out.Cache {
				t.Fatalf("cache %s, huggingface_hub's %s", dir, out.Cache)
			}
			wantHidden := map[string]int{"main": 64, "v1": 32, tagHash: 32}
			for _, rev := range []string{"main", "v1", tagHash} {
				got, err := Resolve(repo + "@" + rev)
				if err != nil {
					t.Fatalf("%s: %v", rev, err)
				}
				if got != out.Snapshots[rev] {
					t.Errorf("%s: resolved %s, transformers reads %s", rev, got, out.Snapshots[rev])
				}
				if out.HiddenSize[rev] != wantHidden[rev] {
					t.Errorf("%s: transformers read hidden_size %d, want %d", rev, out.HiddenSize[rev], wantHidden[rev])
				}
			}
			if got, err := Resolve(repo); err != nil || got != out.Snapshots["main"] {
				t.Errorf("%s: %s, %v; want main's %s", repo, got, err, out.Snapshots["main"])
			}
			if s := out.Scan[mainHash]; s.Path != out.Snapshots["main"] || strings.Join(s.Refs, ",") != "main" {
				t.Errorf("scan_cache_dir: main's snapshot %+v", s)
			}
			if s := out.Scan[tagHash]; s.Path != out.Snapshots["v1"] || strings.Join(s.Refs, ",") != "v1" {
				t.Errorf("scan_cache_dir: v1's snapshot %+v", s)
			}
		})
	}
}

const testdataScript = "testdata/hub_cache.py"
