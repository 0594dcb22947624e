// Package hubcachetest puts a model folder into a Hugging Face cache laid
// out as huggingface_hub writes it, for tests of the readers that take a
// model id (the layout itself is checked against huggingface_hub by
// hubcache's interop test).
package hubcachetest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/internal/hubcache"
)

// Put moves the files of the folder src into the cache folder cache as
// revision commit of the model id, each a blob under blobs/ named by its
// SHA-256 with a relative link to it in snapshots/<commit>/, and points
// refs/<ref> at the commit. It returns the snapshot folder.
func Put(t testing.TB, cache, id, ref, commit, src string) string {
	t.Helper()
	repo := filepath.Join(cache, hubcache.RepoFolder(id))
	snap := filepath.Join(repo, "snapshots", commit)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(repo, "blobs"), snap, filepath.Dir(filepath.Join(repo, "refs", ref))} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			t.Fatalf("hubcachetest: %s is not a regular file", filepath.Join(src, e.Name()))
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		blob := filepath.Join(repo, "blobs", hex.EncodeToString(sum[:]))
		if err := os.Rename(filepath.Join(src, e.Name()), blob); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "..", "blobs", filepath.Base(blob)), filepath.Join(snap, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", ref), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	return snap
}
